package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// killConfig is the worker config of the kill tests: one LLM call at a
// time, chunks small enough that a few hundred memories make many, no
// nightly consolidation, and retries at once.
const killConfig = `
[workers.queues]
default = 2
llm = 1
maintenance = 1

[consolidate]
chunk_chars = 1000
schedule = "off"

[jobs.retro_session]
backoff = "10ms"
[jobs.consolidate]
backoff = "10ms"
[jobs.consolidate_merge]
backoff = "10ms"
[jobs.consolidate_derive]
backoff = "10ms"
[jobs.reflect_task]
backoff = "10ms"
`

// learnAnswer is the retro the fake answers: a lesson, a fact, a handoff.
var learnAnswer = retro.Output{
	Lessons: []retro.Entry{{Text: "go test failed with 'no required module provides package' -> ran outside the module root -> cd to the directory holding go.mod first", Importance: 7}},
	Facts:   []retro.Entry{{Text: "the repo uses pnpm, not npm"}},
	Handoff: []string{"Fixed the module path.", "Tests pass on SQLite.", "Next: run them on Postgres."},
}

// killRig is one database, a fake DeepSeek in this process, and the
// environment and log of the worker processes started against them.
type killRig struct {
	url   string
	store *store.Store
	fake  *fakeds.Server
	tap   *tap
	env   []string
	log   *os.File
	base  []string
	// workers counts the processes started, for waitLog.
	workers int
}

// newKillRig migrates a fresh database and serves the fake DeepSeek with
// script behind a tap that labels each request with label.
func newKillRig(t *testing.T, dialect string, script *fakeds.Script, label func(*http.Request, []byte) string) *killRig {
	t.Helper()
	db := storetest.Database(t, dialect)
	r := &killRig{url: dbURL(db)}
	ctx := context.Background()
	if code, out, errOut := mull(t, ctx, "--database-url", r.url, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s%s", code, out, errOut)
	}
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.store = s
	// Keep-alives every 50ms, so a slow fault holds for its Delay, not a
	// whole second.
	r.fake = fakeds.New(fakeds.Options{Script: script, KeepAliveEvery: 50 * time.Millisecond})
	r.tap = &tap{h: r.fake, label: label, arrived: make(chan string, 256), answered: make(chan string, 256)}
	srv := httptest.NewServer(r.tap)
	t.Cleanup(func() { r.fake.Close(); srv.Close() })
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "mull.toml")
	if err := os.WriteFile(cfgFile, []byte(killConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	r.base = []string{"--database-url", r.url, "--config", cfgFile}
	r.env = []string{"MULL_LOG_FORMAT=json", "MULL_LOG_LEVEL=debug",
		"MULL_LLM_BASE_URL=" + srv.URL, "DEEPSEEK_API_KEY=sk-test",
		"MULL_WORKERS_HEARTBEAT_INTERVAL=200ms", "MULL_WORKERS_DEAD_AFTER=2s",
		"MULL_WORKERS_FETCH_COOLDOWN=10ms", "MULL_WORKERS_FETCH_POLL_INTERVAL=50ms"}
	if r.log, err = os.Create(filepath.Join(dir, "worker.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(r.log.Name())
			t.Logf("worker log:\n%s", b)
		}
	})
	return r
}

// start starts a `mull worker` process and waits until it works jobs.
func (r *killRig) start(t *testing.T) *exec.Cmd {
	t.Helper()
	w := startMull(t, r.env, r.log, append(r.base, "worker")...)
	r.workers++
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
	waitLog(t, r.log.Name(), `"msg":"workers started"`, r.workers)
	return w
}

// stop ends a worker the polite way and checks it exits cleanly.
func (r *killRig) stop(t *testing.T, w *exec.Cmd) {
	t.Helper()
	_ = w.Process.Signal(syscall.SIGTERM)
	if err := w.Wait(); err != nil {
		t.Errorf("worker exit after SIGTERM: %v", err)
	}
}

// kill ends a worker with SIGKILL and reaps it, so its pid is gone and the
// next worker's watchdog rescues its jobs at once.
func kill(t *testing.T, w *exec.Cmd) {
	t.Helper()
	if err := w.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = w.Wait()
}

// manage opens an insert-only client on the rig's database.
func (r *killRig) manage(t *testing.T) *app {
	t.Helper()
	g := &globals{databaseURL: r.url, stdout: io.Discard, stderr: io.Discard}
	a, err := g.open(context.Background(), manage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.close)
	return a
}

// tap passes requests to the fake DeepSeek and reports each, by its label,
// when it arrives and when the fake answered it to the end (a request
// whose client went away first is not answered).
type tap struct {
	h                 http.Handler
	label             func(r *http.Request, body []byte) string
	arrived, answered chan string
}

func (tp *tap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	label := tp.label(r, body)
	tp.arrived <- label
	tp.h.ServeHTTP(w, r)
	if r.Context().Err() == nil {
		tp.answered <- label
	}
}

// waitSignal waits for label on ch; other labels are dropped.
func waitSignal(t *testing.T, ch <-chan string, label string) {
	t.Helper()
	deadline := testwait.After(t)
	for {
		select {
		case got := <-ch:
			if got == label {
				return
			}
		case <-deadline:
			t.Fatalf("no %q request reached the fake in time", label)
		}
	}
}

// waitJob waits until another process finalizes the job.
func waitJob(t *testing.T, a *app, id int64) *rivertype.JobRow {
	t.Helper()
	job, err := waitFinal(context.Background(), a.client, id, testwait.Patience(t))
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// randomDelay waits for a random time below limit and returns it.
func randomDelay(rng *rand.Rand, limit time.Duration) time.Duration {
	d := time.Duration(rng.Int64N(int64(limit)))
	<-time.After(d)
	return d
}

// killRNG picks the kill points; its seed is logged to replay a failure.
func killRNG(t *testing.T) *rand.Rand {
	seed := time.Now().UnixNano()
	t.Logf("kill points seeded with %d", seed)
	return rand.New(rand.NewPCG(uint64(seed), 0))
}
