package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/store/storetest"
)

// harnessConfig is the rig's mull.toml: two LLM calls at a time per
// process (a held planner call must not stop another job), a cooldown long
// enough that no test outlives it (a compaction after a review is inside
// it), and refine_review retried at once after a crash (its declared
// backoff is 10 minutes).
const harnessConfig = `
[workers.queues]
default = 2
llm = 2
maintenance = 1

[consolidate]
schedule = "off"

[harness]
cooldown = "1h"

[jobs.refine_review]
backoff = "10ms"
`

// harnessRig is one database, migrated, a fake DeepSeek in this process,
// and the `mull serve` processes on them. Every mutation goes over HTTP;
// the checks read the HTTP API too, and the job queue (River) where an
// absence must be checked at once: a review the ingest transaction did
// not enqueue.
type harnessRig struct {
	dialect string
	url     string
	cfgFile string
	dir     string
	llmURL  string
	fake    *harnessFake
	mu      sync.Mutex
	started int
	logs    []string
	// jobs is an insert-only River client on the database, for the
	// queue checks.
	jobs *app
}

// newHarnessRig migrates a fresh database of the dialect, writes the
// config and serves the fake DeepSeek.
func newHarnessRig(t *testing.T, dialect string) *harnessRig {
	t.Helper()
	db := storetest.Database(t, dialect)
	r := &harnessRig{dialect: dialect, url: dbURL(db), dir: t.TempDir()}
	var out syncBuffer
	if code := run(context.Background(), []string{"--database-url", r.url, "migrate"}, &out, &out); code != 0 {
		t.Fatalf("migrate: %d %s", code, out.String())
	}
	r.cfgFile = filepath.Join(r.dir, "mull.toml")
	if err := os.WriteFile(r.cfgFile, []byte(harnessConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	r.fake = newHarnessFake()
	srv := httptest.NewServer(r.fake)
	// Release every held call before the server waits for its handlers.
	t.Cleanup(func() { r.fake.release(); r.fake.fake.Close(); srv.Close() })
	r.llmURL = srv.URL
	g := &globals{databaseURL: r.url, stdout: io.Discard, stderr: io.Discard}
	a, err := g.open(context.Background(), manage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.close)
	r.jobs = a
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, l := range r.logs {
			b, _ := os.ReadFile(l)
			t.Logf("log %s:\n%s", filepath.Base(l), b)
		}
	})
	return r
}

// serve starts `mull serve` on a free loopback port, working jobs unless
// workers is false, with extra environment, and waits until it listens.
// Heartbeats are fast, so a killed process's job is rescued within
// seconds by the next one.
func (r *harnessRig) serve(t *testing.T, workers bool, env ...string) *serveProc {
	t.Helper()
	r.mu.Lock()
	r.started++
	name := fmt.Sprintf("serve-%d", r.started)
	logPath := filepath.Join(r.dir, name+".log")
	r.logs = append(r.logs, logPath)
	r.mu.Unlock()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	env = append([]string{"MULL_LOG_FORMAT=json", "MULL_LOG_LEVEL=info",
		"MULL_LLM_BASE_URL=" + r.llmURL, "DEEPSEEK_API_KEY=sk-test",
		"MULL_WORKERS_HEARTBEAT_INTERVAL=200ms", "MULL_WORKERS_DEAD_AFTER=2s",
		"MULL_WORKERS_FETCH_COOLDOWN=10ms", "MULL_WORKERS_FETCH_POLL_INTERVAL=50ms"}, env...)
	args := []string{"--database-url", r.url, "--config", r.cfgFile, "--listen", "127.0.0.1:0", "serve"}
	if !workers {
		args = append(args, "--workers=false")
	}
	cmd := startMull(t, env, logFile, args...)
	waitLog(t, logPath, `"msg":"mull listening"`, 1)
	b, _ := os.ReadFile(logPath)
	m := regexp.MustCompile(`"addr":"(http://[^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no address in its log:\n%s", name, b)
	}
	return &serveProc{name: name, cmd: cmd, base: string(m[1])}
}

// refineJobs lists the refine_review jobs of a session, in any state,
// read from the queue: a review the ingest transaction enqueued is there
// as soon as POST /v1/events answered.
func (r *harnessRig) refineJobs(t *testing.T, session string) []int64 {
	t.Helper()
	res, err := r.jobs.client.JobList(context.Background(), river.NewJobListParams().Kinds("refine_review").First(1000).
		States(rivertype.JobStates()...))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, j := range res.Jobs {
		var args map[string]any
		if err := json.Unmarshal(j.EncodedArgs, &args); err != nil {
			t.Fatalf("job %d args %s: %v", j.ID, j.EncodedArgs, err)
		}
		if args["session"] == session || args["Session"] == session {
			ids = append(ids, j.ID)
		}
	}
	return ids
}
