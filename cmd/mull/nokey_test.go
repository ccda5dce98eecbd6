package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/jobs/probe"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Without an API key the workers start with the llm queue paused ("no
// DEEPSEEK_API_KEY"): a retro waits there at attempt 0 and nothing reaches
// DeepSeek, while other queues work. Started again with the key, the queue
// resumes and the retro runs.
func TestNoKeyPausesLLMQueue(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			url := dbURL(db)
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience(t))
			defer cancel()
			if code, out, errOut := mull(t, ctx, "--database-url", url, "migrate"); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			seedRetroSessions(t, db)
			fake := fakeds.New(fakeds.Options{})
			srv := httptest.NewServer(fake)
			t.Cleanup(func() { fake.Close(); srv.Close() })
			t.Setenv("MULL_LLM_BASE_URL", srv.URL)
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")
			t.Setenv("DEEPSEEK_API_KEY", "")
			t.Setenv("MULL_LLM_API_KEY", "")

			// No key: paused before the workers start.
			a := openWorking(t, ctx, url)
			q, err := a.client.QueueGet(ctx, "llm")
			if err != nil || q.PausedAt == nil || llm.PausedReason(q) != llm.NoKeyReason {
				t.Fatalf("llm queue without a key: %+v, %v", q, err)
			}
			retro, err := a.client.Insert(ctx, retrosession.Args{SessionID: "session-quiet"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			// A probe on another queue completes: the workers fetch, the
			// paused queue does not.
			events, stop := a.client.Subscribe(river.EventKindJobCompleted)
			defer stop()
			p, err := a.client.Insert(ctx, probe.Args{Note: "no-key"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			waitCompleted(t, ctx, events, p.Job.ID)
			job, err := a.client.JobGet(ctx, retro.Job.ID)
			if err != nil || job.State != rivertype.JobStateAvailable || job.Attempt != 0 {
				t.Fatalf("retro without a key: %+v, %v; want available at attempt 0", job, err)
			}
			if n := len(fake.Requests()); n != 0 {
				t.Fatalf("%d requests reached DeepSeek without a key", n)
			}
			if code, h := healthz(t, ctx, a); code != http.StatusOK || h["llm"] != "paused: no key" {
				t.Fatalf("/healthz without a key: %d %v", code, h)
			}
			stopWorking(t, a)

			// With the key: resumed at start, and the retro runs.
			t.Setenv("DEEPSEEK_API_KEY", "sk-test")
			b := openWorking(t, ctx, url)
			events2, stop2 := b.client.Subscribe(river.EventKindJobCompleted)
			defer stop2()
			if q, err := b.client.QueueGet(ctx, "llm"); err != nil || q.PausedAt != nil {
				t.Fatalf("llm queue with a key: %+v, %v", q, err)
			}
			waitCompleted(t, ctx, events2, retro.Job.ID)
			if code, h := healthz(t, ctx, b); code != http.StatusOK || h["llm"] != "ok" {
				t.Fatalf("/healthz with a key: %d %v", code, h)
			}
			stopWorking(t, b)
			if len(fake.Requests()) == 0 {
				t.Fatal("the retro completed without calling DeepSeek")
			}
		})
	}
}

// healthz asks the app's API for /healthz from loopback.
func healthz(t *testing.T, ctx context.Context, a *app) (int, map[string]any) {
	t.Helper()
	srv, err := api.New(ctx, api.Deps{Store: a.store, Client: a.client, Registry: a.reg, Logger: a.log,
		Budget: a.ledger, Config: a.cfg, Ingest: a.ingest, Memories: a.memories})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetWorking(true)
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:7788/healthz", nil)
	req.RemoteAddr = "127.0.0.1:5555"
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	var h map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &h); err != nil {
		t.Fatalf("/healthz: %v: %s", err, w.Body.String())
	}
	return w.Code, h
}

// openWorking opens the app as serve does and starts its workers.
func openWorking(t *testing.T, ctx context.Context, url string) *app {
	t.Helper()
	g := &globals{databaseURL: url, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	a, err := g.open(ctx, work)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ledger.SyncConfig(ctx); err != nil {
		t.Fatal(err)
	}
	if err := holdLLMWithoutKey(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := a.client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return a
}

func stopWorking(t *testing.T, a *app) {
	t.Helper()
	sctx, cancel := context.WithTimeout(context.Background(), testwait.Patience(t))
	defer cancel()
	if err := a.client.Stop(sctx); err != nil {
		t.Error(err)
	}
	a.close()
}

func waitCompleted(t *testing.T, ctx context.Context, events <-chan *river.Event, id int64) {
	t.Helper()
	for {
		select {
		case e := <-events:
			if e.Job != nil && e.Job.ID == id {
				return
			}
		case <-ctx.Done():
			t.Fatalf("job %d did not complete: %v", id, ctx.Err())
		}
	}
}
