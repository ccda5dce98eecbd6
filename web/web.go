// Package web is mull's panel: server-rendered html/template pages with
// htmx for partial updates, served by mull at / from files embedded in the
// binary. It reads through the same services the API uses and changes the
// store only through them, so a change made in the panel passes the same
// trust gate and transactions as one made over the API or the CLI.
//
// Who may do what is the api package's decision (Deps.Access): web only
// obeys it. A visitor who may not read is sent to /login; one who may read
// but not act sees the pages without their forms, and a POST is refused.
// Every form carries a CSRF token (csrf.go), on top of the api's
// cross-origin check.
package web

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/tasks"
)

//go:embed templates static
var files embed.FS

// Access is what one request may do in the panel.
type Access struct {
	// Read: see the pages.
	Read bool
	// Act: submit the forms (invalidate, accept, retry, roll back…).
	Act bool
	// Why, when Act is false, says how to get it (shown on the pages).
	Why string
}

// Deps are the services the panel reads and acts through. A nil service
// makes its pages say it is not configured, never panic.
type Deps struct {
	Store     *store.Store
	Client    *engine.Client
	Registry  *engine.Registry
	Budget    *budget.Ledger
	Memories  *memories.Service
	Tasks     *tasks.Service
	Negledger *negledger.Service
	Harness   *harnesses.Service
	Bench     *benches.Service
	Config    config.Config
	Logger    *slog.Logger
	// Access decides what a request may do (the api's admin rule).
	Access func(*http.Request) Access
	// Health reports the server's health for the overview (what /healthz
	// answers). Nil: the overview omits it.
	Health func(ctx context.Context) Health
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Health is /healthz's view for the overview.
type Health struct {
	// Status is ok, degraded or unhealthy; Reason says why when not ok.
	Status, Reason string
	// Checks are database, migrations, workers and heartbeats.
	Checks []Check
	// Queues maps queue → job state → count.
	Queues map[string]map[string]int64
	// LLM is "ok" or "paused: why".
	LLM string
}

// Check is one health check.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

// Panel serves the pages.
type Panel struct {
	deps  Deps
	mux   *http.ServeMux
	pages *pages
	csrf  *csrfKeys
	// agents keeps the overview's past days of agent usage (overview_spend.go).
	agents agentDays
}

// New builds the panel. It parses every template now, so a broken one
// fails at start, not on a visit.
func New(d Deps) (*Panel, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Access == nil {
		d.Access = func(*http.Request) Access { return Access{} }
	}
	pg, err := parsePages()
	if err != nil {
		return nil, err
	}
	p := &Panel{deps: d, mux: http.NewServeMux(), pages: pg, csrf: newCSRFKeys()}
	static, _ := fs.Sub(files, "static")
	p.mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler(static)))
	p.routes()
	p.mux.HandleFunc("/", p.notFound)
	return p, nil
}

// ServeHTTP serves the panel's routes.
func (p *Panel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mux.ServeHTTP(w, r)
}

// routes mounts every page. Each area registers its own routes in its own
// file, so areas grow without touching one another.
func (p *Panel) routes() {
	p.routesOverview()
	p.routesSessions()
	p.routesMemories()
	p.routesAsOf()
	p.routesLessons()
	p.routesProposals()
	p.routesPlaybooks()
	p.routesLedger()
	p.routesHarness()
	p.routesBench()
	p.routesDeadLetters()
}

// Handler is a panel page or action. It returns an error to show in place
// (see fail); it writes the response itself otherwise.
type Handler func(w http.ResponseWriter, r *http.Request) error

// get mounts a page: readers only; anyone else is sent to log in.
func (p *Panel) get(pattern string, h Handler) {
	p.mux.HandleFunc("GET "+pattern, func(w http.ResponseWriter, r *http.Request) {
		if !p.deps.Access(r).Read {
			p.toLogin(w, r)
			return
		}
		p.serve(w, r, h)
	})
}

// post mounts an action: it needs Act and a valid CSRF token (csrf.go).
// An action answers with a redirect back (303) and a flash message, so a
// reload never repeats it.
func (p *Panel) post(pattern string, h Handler) {
	p.mux.HandleFunc("POST "+pattern, func(w http.ResponseWriter, r *http.Request) {
		a := p.deps.Access(r)
		if !a.Read {
			p.toLogin(w, r)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			p.fail(w, r, Errorf(http.StatusBadRequest, "cannot read the form: %v", err))
			return
		}
		if !a.Act {
			p.fail(w, r, Errorf(http.StatusForbidden, "this browser may read the panel but not change anything: %s", a.Why))
			return
		}
		if !p.csrf.valid(r) {
			p.fail(w, r, Errorf(http.StatusForbidden, "the form's CSRF token is missing or stale: reload the page and submit it again"))
			return
		}
		p.serve(w, r, h)
	})
}

func (p *Panel) serve(w http.ResponseWriter, r *http.Request, h Handler) {
	if err := h(w, r); err != nil {
		p.fail(w, r, err)
	}
}

// toLogin sends a browser to /login and back; anything else gets a 401.
func (p *Panel) toLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" {
		next := strings.ReplaceAll(url.QueryEscape(r.URL.RequestURI()), "%2F", "/")
		http.Redirect(w, r, "/login?next="+next, http.StatusSeeOther)
		return
	}
	p.fail(w, r, Errorf(http.StatusUnauthorized, "log in at /login with the admin token (MULL_ADMIN_TOKEN) to use the panel"))
}

func (p *Panel) notFound(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error": "no route for ` + jsonSafe(r.Method+" "+r.URL.Path) + `"}` + "\n"))
		return
	}
	if !p.deps.Access(r).Read {
		p.toLogin(w, r)
		return
	}
	p.fail(w, r, Errorf(http.StatusNotFound, "no panel page at %s", r.URL.Path))
}

// jsonSafe keeps s inside a JSON string: quotes, backslashes and control
// characters dropped (a path in an error message needs none of them).
func jsonSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// back is where an action returns to: the form's "back" field when it is a
// path on this server, else fallback.
func back(r *http.Request, fallback string) string {
	b := r.PostForm.Get("back")
	if !strings.HasPrefix(b, "/") || strings.HasPrefix(b, "//") || strings.HasPrefix(b, `/\`) || strings.ContainsAny(b, "\r\n\t\\") {
		return fallback
	}
	if u, err := url.Parse(b); err != nil || u.Scheme != "" || u.Host != "" {
		return fallback
	}
	return b
}

// done ends an action: a flash message for the next page, and a 303 to
// where the form came from.
func (p *Panel) done(w http.ResponseWriter, r *http.Request, fallback, message string) error {
	setFlash(w, r, message)
	http.Redirect(w, r, back(r, fallback), http.StatusSeeOther)
	return nil
}
