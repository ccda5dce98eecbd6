package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/llm/fakeds"
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

// The labels the fake gives a refine_review's two calls, by what they ask
// for: the review's {approved, rationale} or the planner's {id, summary,
// edits}. A script rule answers one by its Kind.
const (
	callReview = "refine_review/review"
	callPlan   = "refine_review/plan"
)

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

// harnessFake is fakeds behind a handler that labels each refine_review
// call (callReview, callPlan) in the X-Mull-Job-Kind header the script's
// rules match, counts the calls, reports them as they arrive and as they
// are answered, and can hold planner calls until the test releases them.
type harnessFake struct {
	fake              *fakeds.Server
	arrived, answered chan string

	mu    sync.Mutex
	asked map[string]int
	hold  chan struct{}
}

func newHarnessFake() *harnessFake {
	return &harnessFake{fake: fakeds.New(fakeds.Options{KeepAliveEvery: 50 * time.Millisecond}),
		arrived: make(chan string, 256), answered: make(chan string, 256), asked: map[string]int{}}
}

// answer scripts the replies: the review's and the planner's (nil: the
// default responder's), each answered every time.
func (f *harnessFake) answer(t *testing.T, review, plan any) {
	t.Helper()
	var rules []fakeds.Rule
	for _, a := range []struct {
		kind  string
		reply any
	}{{callReview, review}, {callPlan, plan}} {
		if a.reply == nil {
			continue
		}
		b, err := json.Marshal(a.reply)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, fakeds.Rule{Kind: a.kind, Response: &fakeds.Response{Content: string(b)}})
	}
	if err := f.fake.SetScript(&fakeds.Script{Rules: rules}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.asked)
	f.drain()
}

// drain drops the reports of earlier calls.
func (f *harnessFake) drain() {
	for {
		select {
		case <-f.arrived:
		case <-f.answered:
		default:
			return
		}
	}
}

// holdPlans makes planner calls wait until release.
func (f *harnessFake) holdPlans() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = make(chan struct{})
}

// release lets the held planner calls go on, and later ones through.
func (f *harnessFake) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hold != nil {
		close(f.hold)
		f.hold = nil
	}
}

// calls is how many calls of the label reached the fake since answer.
func (f *harnessFake) calls(label string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[label]
}

func (f *harnessFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	label := r.Header.Get("X-Mull-Job-Kind")
	if label == "refine_review" {
		label = refineCall(body)
		r.Header.Set("X-Mull-Job-Kind", label)
	}
	f.mu.Lock()
	f.asked[label]++
	hold := f.hold
	f.mu.Unlock()
	f.arrived <- label
	if label == callPlan && hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	f.fake.ServeHTTP(w, r)
	if r.Context().Err() == nil {
		f.answered <- label
	}
}

// refineCall tells a refine_review's review call from its planner call by
// the answer format its last message ends with: the two share their system
// prompt and material (DeepSeek's prefix cache), only the ask, last,
// differs, so the format named last is the call's.
func refineCall(body []byte) string {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return "refine_review"
	}
	ask := req.Messages[len(req.Messages)-1].Content
	plan, review := strings.LastIndex(ask, `"edits"`), strings.LastIndex(ask, `"approved"`)
	switch {
	case plan > review:
		return callPlan
	case review > plan:
		return callReview
	}
	return "refine_review"
}

// reviewAnswer is a review call's reply.
func reviewAnswer(approved bool, rationale string) map[string]any {
	return map[string]any{"approved": approved, "rationale": rationale}
}

// planAnswer is a planner call's reply.
func planAnswer(summary string, edits ...map[string]any) map[string]any {
	if edits == nil {
		edits = []map[string]any{}
	}
	return map[string]any{"id": "refine_planned", "summary": summary, "edits": edits}
}

// do sends a request (body nil: none) and returns the status and the body.
func (p *serveProc) do(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(testwait.Context(t), method, p.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := ledgerHTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s %s: %v", p.name, method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s %s: %v", p.name, method, path, err)
	}
	return resp.StatusCode, out
}

// call sends a request, wants the status and decodes the answer into out
// (nil: not decoded); it returns the raw answer.
func (p *serveProc) call(t *testing.T, method, path string, body any, want int, out any) []byte {
	t.Helper()
	code, b := p.do(t, method, path, body)
	if code != want {
		t.Fatalf("%s %s %s: %d %s, want %d", p.name, method, path, code, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s %s: %v in %s", p.name, method, path, err, b)
		}
	}
	return b
}

// push posts events to POST /v1/events.
func (p *serveProc) push(t *testing.T, evs ...events.Event) {
	t.Helper()
	p.call(t, http.MethodPost, "/v1/events", map[string]any{"events": evs}, http.StatusOK, nil)
}

// harnessWS is the workspace of every harness test session.
const harnessWS = "/p/harness"

// sessionEvent is an event of session, numbered n (its id and its time,
// a second apart).
func sessionEvent(session string, n int, typ events.Type, payload string) events.Event {
	return events.Event{ID: fmt.Sprintf("%s-%d", session, n), Type: typ, SessionID: session, Workspace: harnessWS,
		Time: time.Now().UTC().Truncate(time.Second).Add(time.Duration(n-1000) * time.Second), Payload: json.RawMessage(payload)}
}

// startSession makes session known: its start and a user message.
func (p *serveProc) startSession(t *testing.T, session string) {
	t.Helper()
	p.push(t, sessionEvent(session, 0, events.SessionStart, `{"title":"harness test"}`),
		sessionEvent(session, 1, events.UserMessage, `{"text":"make the deploy script idempotent","source":"user"}`))
}

// turnEnds are turn_end events from..to-1 of session (ids from 100).
func turnEnds(session string, from, to int) []events.Event {
	var evs []events.Event
	for n := from; n < to; n++ {
		evs = append(evs, sessionEvent(session, 100+n, events.TurnEnd, fmt.Sprintf(`{"turn":%d,"reason":"completed"}`, n+1)))
	}
	return evs
}

// edit is one edit as the API takes it (a map, so a test can send what
// harness.Edit would not: a bogus blast_radius, a missing field).
type edit = map[string]any

// applyResp is POST /v1/admin/harness/apply's 200 answer.
type applyResp struct {
	Refinement harness.Refinement `json:"refinement"`
	Pending    string             `json:"pending_proposal"`
}

// applyOpts are an apply's other fields.
type applyOpts struct {
	automatic bool
	baseline  map[string]int
}

// apply posts a proposal of edits to the session's store ("": global)
// and returns the refinement.
func (p *serveProc) apply(t *testing.T, session string, o applyOpts, edits ...edit) harness.Refinement {
	t.Helper()
	body := map[string]any{"proposal": map[string]any{"summary": "acceptance", "edits": edits}}
	if session != "" {
		body["session"] = session
	}
	if o.automatic {
		body["automatic"] = true
	}
	if o.baseline != nil {
		body["baseline"] = o.baseline
	}
	var out applyResp
	p.call(t, http.MethodPost, "/v1/admin/harness/apply", body, http.StatusOK, &out)
	if len(out.Refinement.Edits) != len(edits) {
		t.Fatalf("apply of %d edits: refinement %+v records %d", len(edits), out.Refinement, len(out.Refinement.Edits))
	}
	return out.Refinement
}

// mustApply applies edits and fails unless every one applied.
func (p *serveProc) mustApply(t *testing.T, session string, edits ...edit) harness.Refinement {
	t.Helper()
	ref := p.apply(t, session, applyOpts{}, edits...)
	for _, e := range ref.Edits {
		if !e.Applied {
			t.Fatalf("setup edit %s %s/%s rejected: %s", e.Action, e.Kind, e.ID, e.Error)
		}
	}
	return ref
}

// entryResp is GET /v1/admin/harness/entries/{id}'s answer.
type entryResp struct {
	Entry    harnesses.EntryView `json:"entry"`
	Versions []harnesses.Version `json:"versions"`
}

// entry reads an entry of the session's store with every version; ok is
// false when it is not found (404).
func (p *serveProc) entry(t *testing.T, session string, kind harness.Kind, id string) (entryResp, bool) {
	t.Helper()
	q := url.Values{"kind": {string(kind)}, "versions": {"1"}}
	if session != "" {
		q.Set("session", session)
	}
	code, b := p.do(t, http.MethodGet, "/v1/admin/harness/entries/"+url.PathEscape(id)+"?"+q.Encode(), nil)
	switch code {
	case http.StatusNotFound:
		return entryResp{}, false
	case http.StatusOK:
	default:
		t.Fatalf("%s get entry %s/%s: %d %s", p.name, kind, id, code, b)
	}
	var out entryResp
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("entry %s/%s: %v in %s", kind, id, err, b)
	}
	return out, true
}

// mustEntry reads an entry that must exist.
func (p *serveProc) mustEntry(t *testing.T, session string, kind harness.Kind, id string) entryResp {
	t.Helper()
	e, ok := p.entry(t, session, kind, id)
	if !ok {
		t.Fatalf("entry %s/%s of session %q: not found", kind, id, session)
	}
	return e
}

// reviews lists a session's review rows, newest first.
func (p *serveProc) reviews(t *testing.T, session string) []harnesses.ReviewRow {
	t.Helper()
	var out struct {
		Reviews []harnesses.ReviewRow `json:"reviews"`
	}
	p.call(t, http.MethodGet, "/v1/admin/harness/reviews?session="+url.QueryEscape(session), nil, http.StatusOK, &out)
	return out.Reviews
}

// waitReviews polls until the session has at least n review rows (the
// test's deadline bounds it) and returns them.
func (p *serveProc) waitReviews(t *testing.T, session string, n int) []harnesses.ReviewRow {
	t.Helper()
	deadline := time.Now().Add(testwait.Patience(t))
	for {
		rs := p.reviews(t, session)
		if len(rs) >= n {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s has %d review rows, want %d: %+v", session, len(rs), n, rs)
		}
		<-time.After(50 * time.Millisecond)
	}
}

// history lists the refinements of a session's store and the global one.
func (p *serveProc) history(t *testing.T, session string) []harnesses.RefinementView {
	t.Helper()
	var out struct {
		Refinements []harnesses.RefinementView `json:"refinements"`
	}
	p.call(t, http.MethodGet, "/v1/admin/harness/refinements?limit=1000&session="+url.QueryEscape(session), nil, http.StatusOK, &out)
	return out.Refinements
}

// refine enqueues a manual refine of the session's store and returns the
// answer (job_id, duplicate).
func (p *serveProc) refine(t *testing.T, session, instruction string) refineResp {
	t.Helper()
	var out refineResp
	p.call(t, http.MethodPost, "/v1/admin/harness/refine", map[string]any{"session": session, "instruction": instruction},
		http.StatusAccepted, &out)
	if out.JobID == 0 {
		t.Fatalf("refine of %s: no job id", session)
	}
	return out
}

// refineStatus is GET /v1/harness/refine/{job_id}'s answer.
type refineStatus struct {
	JobID      int64                     `json:"job_id"`
	State      rivertype.JobState        `json:"state"`
	Attempt    int                       `json:"attempt"`
	Review     *harnesses.ReviewRow      `json:"review"`
	Refinement *harnesses.RefinementView `json:"refinement"`
	Errors     []string                  `json:"errors"`
}

// refineResp is the 202 of a refine.
type refineResp struct {
	JobID     int64 `json:"job_id"`
	Duplicate bool  `json:"duplicate"`
}

// waitRefine polls GET /v1/harness/refine/{job_id} until the job is
// finalized and returns its status.
func (p *serveProc) waitRefine(t *testing.T, jobID int64) refineStatus {
	t.Helper()
	deadline := time.Now().Add(testwait.Patience(t))
	for {
		var st refineStatus
		p.call(t, http.MethodGet, fmt.Sprintf("/v1/harness/refine/%d", jobID), nil, http.StatusOK, &st)
		switch st.State {
		case rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("refine_review job %d still %s at attempt %d: %v", jobID, st.State, st.Attempt, st.Errors)
		}
		<-time.After(50 * time.Millisecond)
	}
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

// waitCall waits until a call of the label reaches the fake.
func (f *harnessFake) waitCall(t *testing.T, label string) {
	t.Helper()
	waitSignal(t, f.arrived, label)
}

// str is a pointer to s, for the expectations on applied edits.
func str(s string) *string { return &s }
