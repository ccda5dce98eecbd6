// Package api is mull's HTTP surface: health, metrics, the admin API over the
// dead letters, and River UI. Later issues add ingest, digest and tools.
package api

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"riverqueue.com/riverui"

	"github.com/mullhq/mull/benchcap"
	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/tasks"
	"github.com/mullhq/mull/wsconfig"
)

// Deps are what the handlers need.
type Deps struct {
	Store    *store.Store
	Client   *engine.Client
	Registry *engine.Registry
	Logger   *slog.Logger
	// Budget is the token ledger GET /v1/admin/budget reports. Nil: that
	// route answers 503.
	Budget *budget.Ledger
	// AdminToken guards /v1/admin/ and /riverui/. Empty: loopback only.
	AdminToken string
	// Config is the effective configuration (API token, ingest limits,
	// digest quotas…).
	Config config.Config
	// Ingest stores POST /v1/events batches. Nil: that route answers 503.
	Ingest *ingest.Service
	// Memories serves the digest, notices and memory tools. Nil: those
	// routes answer 503.
	Memories *memories.Service
	// Tasks opens, closes and reflects on tasks (task_start, task_end,
	// task_reflect). Nil: those routes answer 503.
	Tasks *tasks.Service
	// Negledger is the negative ledger (seed 003): the agent's
	// /v1/ledger/ routes and the admin's. Nil: those routes answer 503.
	Negledger *negledger.Service
	// Harness is harness refinement (seed 004): the agent's /v1/harness/
	// routes and the admin's. Nil: those routes answer 503.
	Harness *harnesses.Service
	// Bench is A/B benchmark runs (seed 004's benchmark): the admin's
	// /v1/admin/bench/ routes, the agent's harness_benchmark and the
	// benchmark cell's snapshot. Nil: those routes answer 503.
	Bench *benches.Service
	// LLM is the client the LLM proxy relays a benchmark cell's model
	// calls through (llm_proxy.go). Nil: that route answers 503.
	LLM *llm.Client
	// Workspaces are the per-workspace settings (issue 16): GET and PUT
	// /v1/workspaces/{ws}/config and the admin's. Nil: those routes answer
	// 503.
	Workspaces *wsconfig.Service
	// TempDirs are the temporary directories whose workspaces never
	// promote to the global library (/tmp always is one). Defaults to
	// os.TempDir().
	TempDirs []string
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Server routes mull's HTTP API.
type Server struct {
	deps    Deps
	mux     *http.ServeMux
	metrics *Metrics
	// ops counts ingest and reads the operator's gauges (metrics_ops.go).
	ops *opsMetrics
	// ledgerM counts the ledger's answers and effects (metrics_ledger.go).
	ledgerM *ledgerMetrics
	// memErrs counts failed memory reads and writes (memerrors.go).
	memErrs *memErrors
	// working is set while this process's River client works jobs.
	working    atomic.Bool
	workersOff atomic.Bool
	// xorigin refuses cross-origin browser requests (see guard).
	xorigin *http.CrossOriginProtection
	// panel serves every path the API does not own (panel.go).
	panel http.Handler
	// caps checks benchmark cells' capabilities (bench_capability.go).
	caps *benchcap.Keyring
}

// New builds the server and mounts River UI. riverui's background work
// starts with ctx and stops when it ends.
func New(ctx context.Context, d Deps) (*Server, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	// Health, the workers list and the metrics judge heartbeats by it.
	d.Config.Workers.DeadAfter = cmp.Or(d.Config.Workers.DeadAfter, config.Default().Workers.DeadAfter)
	s := &Server{deps: d, mux: http.NewServeMux(), xorigin: http.NewCrossOriginProtection(), caps: benchcap.NewKeyring(d.Store)}
	s.metrics = NewMetrics(d.Store, d.Logger)
	s.metrics.registerOverheadMetrics(d.Store, llm.NewPricing(d.Config.LLM), d.Logger, d.Now)
	s.ops = newOpsMetrics(s.metrics.reg, d)
	s.ledgerM = newLedgerMetrics(s.metrics.reg, d)
	s.memErrs = newMemErrors(s.metrics.reg, d.Now())
	registerHarnessMetrics(s.metrics.reg, d)
	registerBenchMetrics(s.metrics.reg, d)
	ui, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(d.Client, nil),
		Logger:    d.Logger.With("component", "riverui"),
		Prefix:    "/riverui",
	})
	if err != nil {
		return nil, err
	}
	if err := ui.Start(ctx); err != nil {
		return nil, err
	}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	// Behind the admin check: its labels name workspaces and budget keys,
	// and its gauges show costs, which /healthz keeps from strangers too.
	// Prometheus sends the token with authorization.credentials_file.
	s.mux.Handle("GET /metrics", s.admin(s.metrics.Handler().ServeHTTP))
	s.mux.Handle("GET /v1/admin/dlq", s.admin(s.dlqList))
	s.mux.Handle("GET /v1/admin/dlq/{id}", s.admin(s.dlqShow))
	s.mux.Handle("POST /v1/admin/dlq/retry", s.admin(s.dlqRetry))
	s.mux.Handle("POST /v1/admin/dlq/purge", s.admin(s.dlqPurge))
	s.mux.Handle("GET /v1/admin/llm/calls", s.admin(s.llmCalls))
	s.mux.Handle("GET /v1/admin/llm/usage", s.admin(s.llmUsage))
	s.mux.Handle("GET /v1/admin/budget", s.admin(s.budget))
	s.mux.Handle("GET /v1/admin/workers", s.admin(s.workers))
	s.mux.Handle("GET /v1/admin/llm/calls/{id}", s.admin(s.llmCallShow))
	s.routesIngest()
	s.routesMemory()
	s.routesUseLog()
	s.routesWorkspaces()
	s.routesSteer()
	s.routesConsolidate()
	s.routesLogin()
	s.routesReport()
	s.routesLessons()
	s.routesTasks()
	s.routesLedger()
	s.routesHarness()
	s.routesBench()
	s.routesLLMProxy()
	s.mux.Handle("/riverui/", s.admin(ui.ServeHTTP))
	s.mux.Handle("/riverui", http.RedirectHandler("/riverui/", http.StatusMovedPermanently))
	if err := s.mountPanel(); err != nil {
		return nil, err
	}
	return s, nil
}

// Metrics exposes the collectors so serve can feed River's events to them.
func (s *Server) Metrics() *Metrics { return s.metrics }

// SetWorking records whether this process's workers are running; /healthz
// reports it.
func (s *Server) SetWorking(on bool) { s.working.Store(on) }

// ServeHTTP refuses what a web page could send (guard) and bytes no store
// keeps (inputOK) before routing.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r) || !s.inputOK(w, r) {
		return
	}
	if s.panel != nil && panelPath(r.URL.Path) {
		s.panel.ServeHTTP(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// admin guards a handler with the admin token, as a bearer token or a
// /login cookie, or with loopback when no token is configured. A browser
// navigating without a login is sent to /login; API clients get a 401.
func (s *Server) admin(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.deps.AdminToken != "" {
			if !s.isAdmin(r) {
				if wantsHTML(r) {
					// Slashes read better unescaped and are valid in a query.
					next := strings.ReplaceAll(url.QueryEscape(r.URL.RequestURI()), "%2F", "/")
					http.Redirect(w, r, loginPath+"?next="+next, http.StatusSeeOther)
					return
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="mull admin"`)
				writeError(w, http.StatusUnauthorized, "admin routes need Authorization: Bearer <MULL_ADMIN_TOKEN>, or a browser login at /login")
				return
			}
		} else if !isLoopback(r.RemoteAddr) {
			writeError(w, http.StatusForbidden, "no admin token is configured, so admin routes answer only on loopback; set MULL_ADMIN_TOKEN")
			return
		}
		h(w, r)
	})
}

// isAdmin reports a request carrying the admin token (bearer or login
// cookie). False when no token is configured.
func (s *Server) isAdmin(r *http.Request) bool {
	tok := s.deps.AdminToken
	if tok == "" {
		return false
	}
	// The scheme is case-insensitive (RFC 7235): "bearer" is fine too.
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1 {
		return true
	}
	return s.loggedIn(r)
}

func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// errorBody is every error response: one message saying what was wrong.
type errorBody struct {
	Error string `json:"error"`
}

// readJSONBody reads a body of at most 1 MiB whose strings every store
// keeps faithfully (checkJSONBody), answering the error itself when it
// cannot: decodeBody's and decodeLedger's first half.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	switch {
	case isTooBig(err):
		writeError(w, http.StatusRequestEntityTooLarge, "body over 1 MiB")
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return nil, false
	case !checkJSONBody(w, body):
		return nil, false
	}
	return body, true
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

// decodeBody reads a JSON body into v, refusing unknown fields, data after
// the value, bodies over 1 MiB and strings no store keeps faithfully (NUL,
// invalid UTF-8, lone surrogates, over maxBodyString bytes: 400 naming the
// JSON path), and answers the error itself when it fails.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := readJSONBody(w, r)
	if !ok {
		return false
	}
	if err := strictDecode(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return false
	}
	return true
}
