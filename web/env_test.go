package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/tasks"
	"github.com/mullhq/mull/workflows"
)

// adminToken is every env's MULL_ADMIN_TOKEN.
const adminToken = "panel-admin-token"

// env is a whole mull as serve builds it (every job kind, a working River
// client, the fake DeepSeek as the model), served over HTTP, with the
// services at hand so a test can make data and check the store after a
// panel action.
type env struct {
	t      *testing.T
	S      *store.Store
	Cfg    config.Config
	Client *engine.Client
	Events <-chan *river.Event
	Fake   *fakeds.Server
	LLM    *llm.Client
	Budget *budget.Ledger
	Ingest *ingest.Service
	Mem    *memories.Service
	Tasks  *tasks.Service
	Neg    *negledger.Service
	Harn   *harnesses.Service
	Bench  *benches.Service
	Runner *workflows.Runner
	Srv    *api.Server
	// URL is the server's base URL (http://127.0.0.1:port).
	URL string
	// now is added to the wall clock (clock).
	now time.Duration
}

// envOpts adjust an env before it is built.
type envOpts struct {
	// NoToken runs without an admin token (loopback reads, read-only).
	NoToken bool
	// Edit changes the config.
	Edit func(*config.Config)
}

// newEnv builds an env on s; everything stops when t ends.
func newEnv(t *testing.T, s *store.Store, o ...envOpts) *env {
	t.Helper()
	var opt envOpts
	if len(o) > 0 {
		opt = o[0]
	}
	cfg := enginetest.Config()
	if !opt.NoToken {
		cfg.AdminToken = adminToken
	}
	fake := fakeds.New(fakeds.Options{})
	fsrv := httptest.NewServer(fake)
	t.Cleanup(fsrv.Close)
	cfg.LLM.BaseURL, cfg.LLM.APIKey = fsrv.URL+"/v1", "sk-fake"
	if opt.Edit != nil {
		opt.Edit(&cfg)
	}
	e := &env{t: t, S: s, Cfg: cfg, Fake: fake}
	log := enginetest.Logger()
	reg := engine.NewRegistry(cfg.Jobs)
	e.Runner = workflows.New(s, log)
	var err error
	if e.Budget, err = budget.New(s, cfg.Budget, budget.WithLogger(log)); err != nil {
		t.Fatal(err)
	}
	e.LLM = llm.New(llm.Options{Config: cfg.LLM, Ledger: e.Budget, Calls: s, Logger: log})
	e.Neg = negledger.New(s, cfg.Ledger, log)
	e.Harn = harnesses.New(s, cfg.Harness, log)
	e.Mem = memories.New(s, cfg.Memory, cfg.Digest).WithLessons(cfg.Lessons, cfg.Reflection).WithLedger(e.Neg)
	e.Bench = benches.New(s, cfg.Bench, e.Harn, e.Mem, e.Runner, log)
	w := jobs.Register(reg, jobs.Deps{Store: s, Logger: log, LLM: e.LLM, Ledger: e.Budget, Runner: e.Runner, Config: cfg})
	e.Ingest = w.Ingest
	e.Tasks = tasks.New(s, e.Mem, e.Ingest, cfg.Reflection)
	e.Client = enginetest.NewClient(t, s, reg, cfg, true)
	e.Events = enginetest.Events(t, e.Client)
	if err := e.Client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Client.Stop(ctx)
	})
	e.Tasks.UseClient(e.Client)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e.Srv, err = api.New(ctx, api.Deps{Store: s, Client: e.Client, Registry: reg, Logger: log, AdminToken: cfg.AdminToken,
		Budget: e.Budget, Config: cfg, Ingest: e.Ingest, Memories: e.Mem, Tasks: e.Tasks, Negledger: e.Neg,
		Harness: e.Harn, Bench: e.Bench, Now: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	e.Srv.SetWorking(true)
	ts := httptest.NewServer(e.Srv)
	t.Cleanup(ts.Close)
	e.URL = ts.URL
	return e
}

func (e *env) clock() time.Time { return time.Now().Add(e.now) }

// httpClient is a client with a cookie jar, logged in when login is true.
// It never follows redirects, so a test sees each 303.
func (e *env) httpClient(login bool) *http.Client {
	e.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if login && e.Cfg.AdminToken != "" {
		res, err := c.PostForm(e.URL+"/login", url.Values{"token": {e.Cfg.AdminToken}, "next": {"/"}})
		if err != nil {
			e.t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther {
			e.t.Fatalf("login: %d", res.StatusCode)
		}
	}
	return c
}

// get fetches path as a browser would (Accept: text/html) and returns the
// status and body.
func (e *env) get(c *http.Client, path string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.URL+path, nil)
	req.Header.Set("Accept", "text/html")
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// csrfToken reads the CSRF token from a page's form.
func csrfToken(t *testing.T, page string) string {
	t.Helper()
	const mark = `name="csrf" value="`
	i := strings.Index(page, mark)
	if i < 0 {
		t.Fatalf("no CSRF field in the page:\n%s", page)
	}
	rest := page[i+len(mark):]
	return rest[:strings.IndexByte(rest, '"')]
}

// postForm submits a panel form as the page's own origin would.
func (e *env) postForm(c *http.Client, path string, form url.Values) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	return res
}
