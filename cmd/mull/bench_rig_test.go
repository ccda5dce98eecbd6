package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/llm/fakeds"
)

// benchConfig is the bench rig's mull.toml: the harness rig's, with one
// failed candidate cell allowed (so "a failed cell is null, not 0" can be
// accepted) and bench cells retried at once (their declared backoff is
// 10 seconds per attempt).
const benchConfig = harnessConfig + `
[bench]
max_failed_cells = 1

[jobs.bench_cell]
backoff = "10ms"

[jobs.bench_decide]
backoff = "10ms"
`

// newBenchRig is the harness rig (one migrated database, `mull serve`
// processes on it) with benchConfig and benchFake as its DeepSeek.
func newBenchRig(t *testing.T, dialect string) (*harnessRig, *benchFake) {
	t.Helper()
	r := newHarnessRig(t, dialect)
	if err := os.WriteFile(r.cfgFile, []byte(benchConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newBenchFake(t)
	srv := httptest.NewServer(f)
	t.Cleanup(func() { f.release(); f.good.Close(); f.bad.Close(); srv.Close() })
	r.llmURL = srv.URL
	return r, f
}

// benchFake is mull's fake DeepSeek for bench cells: the default
// responder (the executor echoes the snapshot's lines, the judge scores
// 40 + 15 per backquoted rubric term in the evidence) behind a handler
// that counts the executor and judge calls, reports each judge answer,
// answers malformed JSON to the executor calls the test names (every
// attempt), and can hold every bench call until released.
type benchFake struct {
	good, bad *fakeds.Server
	// judged reports each judge call answered.
	judged chan struct{}
	// held reports each call the hold stopped.
	held chan struct{}

	mu     sync.Mutex
	fail   []failRule
	execs  int
	judges int
	hold   chan struct{}
}

func newBenchFake(t *testing.T) *benchFake {
	t.Helper()
	f := &benchFake{good: fakeds.New(fakeds.Options{KeepAliveEvery: 50 * time.Millisecond}),
		bad:    fakeds.New(fakeds.Options{KeepAliveEvery: 50 * time.Millisecond}),
		judged: make(chan struct{}, 1024), held: make(chan struct{}, 1024)}
	if err := f.bad.SetScript(&fakeds.Script{Rules: []fakeds.Rule{{Kind: "bench_cell",
		Response: &fakeds.Response{Content: "the executor rambles instead of answering JSON"}}}}); err != nil {
		t.Fatal(err)
	}
	return f
}

// failRule names the executor calls answered malformed: those whose
// prompt holds both texts (a case's statement, a side's snapshot marker).
type failRule struct {
	statement, marker string
	calls             int
}

// failExecutor makes every executor call whose prompt holds both texts
// answer malformed JSON; it returns the rule's index for failedCalls.
func (f *benchFake) failExecutor(statement, marker string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = append(f.fail, failRule{statement: statement, marker: marker})
	return len(f.fail) - 1
}

// failedCalls is how many executor calls rule i answered malformed.
func (f *benchFake) failedCalls(i int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail[i].calls
}

// counts are the executor and judge calls so far.
func (f *benchFake) counts() (execs, judges int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.execs, f.judges
}

// holdAll makes every later bench call wait until release.
func (f *benchFake) holdAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = make(chan struct{})
}

// release lets the held calls go on, and later ones through.
func (f *benchFake) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hold != nil {
		close(f.hold)
		f.hold = nil
	}
}

func (f *benchFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if r.Header.Get("X-Mull-Job-Kind") != "bench_cell" {
		f.good.ServeHTTP(w, r)
		return
	}
	user := lastUser(body)
	judge := strings.Contains(user, "# Rubric\n")
	f.mu.Lock()
	target, hold := f.good, f.hold
	if judge {
		f.judges++
	} else {
		f.execs++
		for i, p := range f.fail {
			if strings.Contains(user, p.statement) && strings.Contains(user, p.marker) {
				target = f.bad
				f.fail[i].calls++
			}
		}
	}
	f.mu.Unlock()
	if hold != nil {
		f.held <- struct{}{}
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	target.ServeHTTP(w, r)
	if judge && r.Context().Err() == nil {
		f.judged <- struct{}{}
	}
}

// lastUser is the request's last user message.
func lastUser(body []byte) string {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Content
		}
	}
	return ""
}

// waitJudged waits until n more judge calls were answered.
func (f *benchFake) waitJudged(t *testing.T, n int) {
	t.Helper()
	deadline := testwait.After(t)
	for range n {
		select {
		case <-f.judged:
		case <-deadline:
			t.Fatalf("fewer than %d judge calls answered in time", n)
		}
	}
}

// waitHeld waits until a call is held.
func (f *benchFake) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-f.held:
	case <-testwait.After(t):
		t.Fatal("no bench call reached the held fake in time")
	}
}

// benchCase is a case as the import takes it.
type benchCase struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Statement string `json:"statement"`
	Rubric    string `json:"rubric"`
}

// addFrozenSet imports the cases as set and freezes it.
func (p *serveProc) addFrozenSet(t *testing.T, set string, cases ...benchCase) {
	t.Helper()
	p.call(t, http.MethodPost, "/v1/admin/bench/cases/import", map[string]any{"set": set, "cases": cases}, http.StatusCreated, nil)
	var frozen struct {
		Frozen []string `json:"frozen"`
	}
	p.call(t, http.MethodPost, "/v1/admin/bench/freeze", map[string]any{"set": set}, http.StatusOK, &frozen)
	if len(frozen.Frozen) != len(cases) {
		t.Fatalf("set %s: froze %v, want %d cases", set, frozen.Frozen, len(cases))
	}
}

// capture captures the session's harness as snapshot id.
func (p *serveProc) capture(t *testing.T, id, session string) bench.Snapshot {
	t.Helper()
	var out struct {
		Snapshot bench.Snapshot `json:"snapshot"`
	}
	p.call(t, http.MethodPost, "/v1/admin/bench/snapshots", map[string]any{"id": id, "session": session}, http.StatusCreated, &out)
	return out.Snapshot
}

// startBench starts a refinement's run against the reference on the set.
func (p *serveProc) startBench(t *testing.T, refinement, reference, set string, runs int) benches.Run {
	t.Helper()
	var out struct {
		Run benches.Run `json:"run"`
	}
	p.call(t, http.MethodPost, "/v1/admin/bench/runs", map[string]any{"refinement_id": refinement,
		"reference_snapshot_id": reference, "set": set, "runs": runs}, http.StatusAccepted, &out)
	return out.Run
}

// benchRun reads a run with its cells and decision.
func (p *serveProc) benchRun(t *testing.T, id string) benches.Run {
	t.Helper()
	var out struct {
		Run benches.Run `json:"run"`
	}
	p.call(t, http.MethodGet, "/v1/admin/bench/runs/"+id, nil, http.StatusOK, &out)
	return out.Run
}

// waitBench polls the run until it is no longer running (the test's
// deadline bounds it).
func (p *serveProc) waitBench(t *testing.T, id string) benches.Run {
	t.Helper()
	deadline := time.Now().Add(testwait.Patience(t))
	for {
		run := p.benchRun(t, id)
		if run.Status != "running" {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still running: %d/%d cells done, %d failed", id, run.Done, run.Total, run.Failed)
		}
		<-time.After(50 * time.Millisecond)
	}
}

// waitCellsDone polls the run until at least n cells are recorded.
func (p *serveProc) waitCellsDone(t *testing.T, id string, n int) benches.Run {
	t.Helper()
	deadline := time.Now().Add(testwait.Patience(t))
	for {
		run := p.benchRun(t, id)
		if run.Done >= n {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %d cells recorded, want %d", id, run.Done, n)
		}
		<-time.After(20 * time.Millisecond)
	}
}

// benchJobs lists the queue's jobs of the kinds, in any state.
func (r *harnessRig) benchJobs(t *testing.T, kinds ...string) []*rivertype.JobRow {
	t.Helper()
	res, err := r.jobs.client.JobList(context.Background(), river.NewJobListParams().Kinds(kinds...).First(1000).
		States(rivertype.JobStates()...))
	if err != nil {
		t.Fatal(err)
	}
	return res.Jobs
}

// cellKey names a cell.
func cellKey(c bench.Cell) string {
	return c.CaseID + "/" + string(c.Side) + "/" + string(rune('0'+c.Iteration))
}

// rubric backquotes each term.
func rubric(terms ...string) string {
	var b strings.Builder
	b.WriteString("Mentions")
	for _, term := range terms {
		b.WriteString(" `" + term + "`")
	}
	return b.String()
}
