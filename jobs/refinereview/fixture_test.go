package refinereview_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/jobs"
	"github.com/mullhq/mull/jobs/refinereview"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// t0 is the tests' start; the store's clock starts an hour later and is
// moved by the tests (the cooldown reads it).
var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

const ws = "/w/app"

// The fake's answer headings (learn/harness's prompts): a script rule's
// Marker picks one call of the job.
const (
	reviewAsk = "# Your answer: the review gate's verdict"
	planAsk   = "# Your answer: the refiner's plan"
)

// env is the app's wiring (jobs.Register) over a test store with a working
// client and a fake DeepSeek: refine_review runs as in production.
type env struct {
	t       *testing.T
	s       *store.Store
	fake    *fakeds.Server
	client  *engine.Client
	events  <-chan *river.Event
	wiring  jobs.Wiring
	harness *harnesses.Service
	cfg     config.Config
	now     atomic.Int64
	n       int
}

// start starts the app's jobs with the fake's script, refine_review tried
// attempts times with no wait between, and edit applied to the config.
func start(t *testing.T, s *store.Store, sc *fakeds.Script, attempts int, edit func(*config.Config)) *env {
	t.Helper()
	e := &env{t: t, s: s}
	e.setNow(t0.Add(time.Hour))
	s.SetClock(func() time.Time { return time.Unix(0, e.now.Load()).UTC() })
	l := llmtest.New(t, s, llmtest.Options{Fake: fakeds.Options{Script: sc}, Edit: func(c *config.Config) {
		c.Jobs = map[string]config.JobOverride{"refine_review": {MaxAttempts: attempts, Backoff: config.Duration(time.Millisecond)}}
		if edit != nil {
			edit(c)
		}
	}})
	e.cfg = l.Config
	reg := engine.NewRegistry(l.Config.Jobs)
	e.wiring = jobs.Register(reg, jobs.Deps{Store: s, Logger: enginetest.Logger(), LLM: l.LLM, Ledger: l.Ledger,
		Runner: workflows.New(s, enginetest.Logger()), Config: l.Config})
	e.client = enginetest.NewClient(t, s, reg, l.Config, true)
	e.events = enginetest.Events(t, e.client)
	if err := e.client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.client.Stop(ctx)
	})
	e.fake, e.harness = l.Fake, harnesses.New(s, l.Config.Harness, enginetest.Logger())
	return e
}

func (e *env) setNow(at time.Time)       { e.now.Store(at.UnixNano()) }
func (e *env) advance(d time.Duration)   { e.setNow(time.Unix(0, e.now.Load()).Add(d)) }
func (e *env) clock() time.Time          { return time.Unix(0, e.now.Load()).UTC() }
func local(session string) harness.Scope { return harness.Local(session) }
func ptr[T any](v T) *T                  { return &v }
func mustJSON(v any) string              { b, _ := json.Marshal(v); return string(b) }
func answer(marker string, v any) fakeds.Rule {
	return fakeds.Rule{Kind: "refine_review", Marker: marker, Response: &fakeds.Response{Content: mustJSON(v)}}
}

// ingest stores one event of session, a second after the last.
func (e *env) ingest(session string, typ events.Type, payload any) {
	e.t.Helper()
	e.n++
	raw, _ := json.Marshal(payload)
	ev := events.Event{ID: fmt.Sprintf("%s-%d", session, e.n), Type: typ, SessionID: session,
		Workspace: ws, Time: t0.Add(time.Duration(e.n) * time.Second), Payload: raw}
	if _, err := e.wiring.Ingest.IngestBatch(context.Background(), []events.Event{ev}, store.SourcePush); err != nil {
		e.t.Fatal(err)
	}
}

// open starts a session with a user's request.
func (e *env) open(session string) {
	e.t.Helper()
	e.ingest(session, events.SessionStart, events.SessionStartPayload{Title: "fix the pager"})
	e.ingest(session, events.UserMessage, events.MessagePayload{Text: "page 2 shows page 1's items; fix the pager", Source: "user"})
}

// fail stores a failed tool call: the trajectory then shows a failure.
func (e *env) fail(session string) {
	e.t.Helper()
	e.ingest(session, events.ToolResult, events.ToolResultPayload{Tool: "bash", Command: "go test ./pager", ExitCode: ptr(1),
		IsError: true, Output: "--- FAIL: TestPage2 offset 0, want 10"})
}

// turns stores n turn_end events.
func (e *env) turns(session string, n int) {
	e.t.Helper()
	for i := range n {
		e.ingest(session, events.TurnEnd, events.TurnEndPayload{Turn: i + 1, Reason: "completed"})
	}
}

func (e *env) compaction(session string) {
	e.t.Helper()
	e.ingest(session, events.CompactionEnd, events.CompactionEndPayload{})
}

// jobs lists the refine_review jobs, oldest first.
func (e *env) jobs() []*rivertype.JobRow {
	e.t.Helper()
	res, err := e.client.JobList(context.Background(), river.NewJobListParams().Kinds("refine_review").First(1000))
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Jobs
}

// onlyJob is the one refine_review job, after it reached a final state.
func (e *env) onlyJob(want int) *rivertype.JobRow {
	e.t.Helper()
	js := e.jobs()
	if len(js) != want {
		e.t.Fatalf("%d refine_review jobs, want %d: %+v", len(js), want, js)
	}
	return e.waitFinal(js[want-1].ID)
}

func (e *env) waitFinal(id int64) *rivertype.JobRow {
	e.t.Helper()
	row, err := e.client.JobGet(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	switch row.State {
	case rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
		return row
	}
	enginetest.WaitFinal(e.t, e.events, id)
	if row, err = e.client.JobGet(context.Background(), id); err != nil {
		e.t.Fatal(err)
	}
	return row
}

// run inserts a job and waits until it is final.
func (e *env) run(a refinereview.Args) *rivertype.JobRow {
	e.t.Helper()
	res, err := e.client.Insert(context.Background(), a, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.waitFinal(res.Job.ID)
}

func (e *env) reviews(session string) []harnesses.ReviewRow {
	e.t.Helper()
	rs, err := e.harness.Reviews(context.Background(), harnesses.ReviewFilter{Session: session})
	if err != nil {
		e.t.Fatal(err)
	}
	return rs
}

func (e *env) gate(session string) harness.Gate {
	e.t.Helper()
	var g harness.Gate
	err := e.s.InTx(context.Background(), func(tx *sql.Tx) (err error) {
		g, err = e.s.HarnessGate(context.Background(), tx, session)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

func (e *env) state(scope harness.Scope) harness.State {
	e.t.Helper()
	st, err := e.harness.State(context.Background(), scope)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// requests are the fake's refine_review requests.
func (e *env) requests() []fakeds.Recorded {
	var out []fakeds.Recorded
	for _, r := range e.fake.Requests() {
		if r.Kind == "refine_review" {
			out = append(out, r)
		}
	}
	return out
}
