package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/store"
)

// loopback is the RemoteAddr of requests unless a test says otherwise;
// httptest.NewRequest's default (192.0.2.1) is not loopback.
const loopback = "127.0.0.1:40000"

// testArgs is a job whose Mode says how each attempt ends: "fail" returns an
// error, "cancel" cancels with an error, "cutoff" cancels like a workflow
// step its failed run cut off, anything else succeeds.
type testArgs struct {
	Mode string `json:"mode"`
}

func (testArgs) Kind() string { return "apitest" }

type testWorker struct {
	river.WorkerDefaults[testArgs]
	// healed makes "fail" jobs succeed, so a retried dead letter completes.
	healed atomic.Bool
}

func (w *testWorker) Work(ctx context.Context, job *river.Job[testArgs]) error {
	switch {
	case job.Args.Mode == "cancel":
		return river.JobCancel(fmt.Errorf("permanent on attempt %d", job.Attempt))
	case job.Args.Mode == "cutoff":
		return river.JobCancel(fmt.Errorf("%sworkflow run wf_x is failed", store.StepCutOff))
	case job.Args.Mode == "fail" && !w.healed.Load():
		return fmt.Errorf("boom on attempt %d", job.Attempt)
	}
	return nil
}

// fixture is a server over a working River client on a test store.
type fixture struct {
	t      *testing.T
	s      *store.Store
	reg    *engine.Registry
	c      *engine.Client
	events <-chan *river.Event
	worker *testWorker
	srv    *api.Server
	// offset moves the server's clock.
	offset atomic.Int64
}

// newFixture starts a client and a server whose admin token is token.
func newFixture(t *testing.T, s *store.Store, token string) *fixture {
	t.Helper()
	f := &fixture{t: t, s: s, worker: &testWorker{}}
	f.reg = engine.NewRegistry(nil)
	engine.Add(f.reg, engine.Spec{MaxAttempts: 2, Backoff: time.Millisecond}, f.worker)
	f.c = enginetest.Start(t, s, f.reg, enginetest.Config())
	f.events = enginetest.Events(t, f.c)
	f.srv = f.server(s, token)
	return f
}

// server builds another server on the fixture's client, over store s.
func (f *fixture) server(s *store.Store, token string) *api.Server {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(cancel)
	srv, err := api.New(ctx, api.Deps{
		Store: s, Client: f.c, Registry: f.reg, Logger: enginetest.Logger(), AdminToken: token,
		Now: func() time.Time { return time.Now().Add(time.Duration(f.offset.Load())) },
	})
	if err != nil {
		f.t.Fatalf("api.New: %v", err)
	}
	return srv
}

// run inserts one job and waits until it reaches a final state.
func (f *fixture) run(mode string) *rivertype.JobRow {
	f.t.Helper()
	res, err := f.c.Insert(context.Background(), testArgs{Mode: mode}, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return enginetest.WaitFinal(f.t, f.events, res.Job.ID)
}

// dead runs a job that must end as a dead letter.
func (f *fixture) dead() *rivertype.JobRow {
	f.t.Helper()
	row := f.run("fail")
	if row.State != rivertype.JobStateDiscarded {
		f.t.Fatalf("failing job ended %s", row.State)
	}
	return row
}

func (f *fixture) get(id int64) *rivertype.JobRow {
	f.t.Helper()
	row, err := f.c.JobGet(context.Background(), id)
	if err != nil {
		f.t.Fatalf("get job %d: %v", id, err)
	}
	return row
}

// reqOpt changes a request before it is served.
type reqOpt func(*http.Request)

func bearer(token string) reqOpt {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

func header(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }

func from(addr string) reqOpt { return func(r *http.Request) { r.RemoteAddr = addr } }

// do serves one request on the fixture's server, from loopback by default.
func (f *fixture) do(method, target, body string, opts ...reqOpt) *httptest.ResponseRecorder {
	f.t.Helper()
	return serve(f.srv, method, target, body, opts...)
}

func serve(srv *api.Server, method, target, body string, opts ...reqOpt) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	req.RemoteAddr = loopback
	// httptest's default Host (example.com) is not a loopback name.
	req.Host = "127.0.0.1:7788"
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

// expect checks a response's status and decodes its JSON body into out
// (when out is not nil).
func expect(t *testing.T, rec *httptest.ResponseRecorder, status int, out any) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body: %s", rec.Code, status, rec.Body)
	}
	if out == nil {
		return
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		t.Fatalf("decode %s: %v", rec.Body, err)
	}
}

// expectError checks an error response's status and that its message
// contains want.
func expectError(t *testing.T, rec *httptest.ResponseRecorder, status int, want string) {
	t.Helper()
	var body struct {
		Error string `json:"error"`
	}
	expect(t, rec, status, &body)
	if !strings.Contains(body.Error, want) {
		t.Fatalf("error %q does not contain %q", body.Error, want)
	}
}
