package retroerror_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/retroerror"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

const ws = "/home/dev/proj"

// The seed's rule: 6 s debounce, 60 s apart, at most 3 per session.
func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := retroerror.DefaultRules
	if r.Debounce != 6*time.Second || r.MinGap != 60*time.Second || r.MaxPerSession != 3 {
		t.Fatalf("DefaultRules = %+v, want 6s, 60s, 3", r)
	}
	for _, tt := range []struct {
		name  string
		count int
		last  time.Time
		now   time.Time
		want  time.Time
		ok    bool
	}{
		{"first error", 0, time.Time{}, t0, t0.Add(6 * time.Second), true},
		{"second soon after the first", 1, t0.Add(6 * time.Second), t0.Add(10 * time.Second), t0.Add(66 * time.Second), true},
		{"second long after the first", 1, t0.Add(6 * time.Second), t0.Add(5 * time.Minute), t0.Add(5*time.Minute + 6*time.Second), true},
		{"gap exactly met by the debounce", 2, t0, t0.Add(54 * time.Second), t0.Add(60 * time.Second), true},
		{"third", 2, t0.Add(66 * time.Second), t0.Add(70 * time.Second), t0.Add(126 * time.Second), true},
		{"fourth refused", 3, t0.Add(126 * time.Second), t0.Add(time.Hour), time.Time{}, false},
		{"over the cap refused", 7, t0, t0.Add(time.Hour), time.Time{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			at, ok := r.Decide(tt.count, tt.last, tt.now)
			if ok != tt.ok || !at.Equal(tt.want) {
				t.Fatalf("Decide(%d, %v, %v) = %v, %v; want %v, %v", tt.count, tt.last, tt.now, at, ok, tt.want, tt.ok)
			}
		})
	}
}

type rig struct {
	s      *store.Store
	svc    *ingest.Service
	client *engine.Client
	now    time.Time
	n      int
}

// newRig wires ingest with the retro_error hook and a client that does not
// work jobs, on a store whose clock the test moves.
func newRig(t *testing.T, s *store.Store) *rig {
	t.Helper()
	r := &rig{s: s, now: time.Now().UTC().Truncate(time.Second)}
	s.SetClock(func() time.Time { return r.now })
	reg := engine.NewRegistry(nil)
	engine.Add(reg, retroerror.Spec, &retroerror.Worker{Store: s, Logger: enginetest.Logger()})
	r.client = enginetest.NewClient(t, s, reg, enginetest.Config(), false)
	r.svc = ingest.New(s, ingest.Hooks{AgentError: (&retroerror.Hook{Store: s, Logger: enginetest.Logger()}).AgentError})
	r.svc.UseClient(r.client)
	return r
}

func (r *rig) event(id string, typ events.Type, payload string) events.Event {
	r.n++
	return events.Event{ID: fmt.Sprintf("%s-%d", id, r.n), Type: typ, SessionID: id, Workspace: ws,
		Time: r.now.Add(-time.Minute).Add(time.Duration(r.n) * time.Millisecond), Payload: json.RawMessage(payload)}
}

func (r *rig) start(t *testing.T, id string, primary bool) {
	t.Helper()
	r.ingest(t, r.event(id, events.SessionStart, fmt.Sprintf(`{"title":"fix the build","primary":%t}`, primary)))
}

func (r *rig) errs(id string, n int) []events.Event {
	out := make([]events.Event, n)
	for i := range out {
		out[i] = r.event(id, events.Error, fmt.Sprintf(`{"message":"tool call failed %d","code":"E%d"}`, i, i))
	}
	return out
}

func (r *rig) ingest(t *testing.T, batch ...events.Event) {
	t.Helper()
	if _, err := r.svc.IngestBatch(context.Background(), batch, store.SourcePush); err != nil {
		t.Fatal(err)
	}
}

// jobs lists the session's retro_error jobs, oldest first.
func (r *rig) jobs(t *testing.T, id string) []*rivertype.JobRow {
	t.Helper()
	res, err := r.client.JobList(context.Background(), river.NewJobListParams().Kinds("retro_error").First(100))
	if err != nil {
		t.Fatal(err)
	}
	var out []*rivertype.JobRow
	for _, j := range res.Jobs {
		var a retroerror.Args
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			t.Fatal(err)
		}
		if a.SessionID == id {
			out = append(out, j)
		}
	}
	return out
}

// complete stands for the job having run.
func (r *rig) complete(t *testing.T, id int64) {
	t.Helper()
	if _, err := r.s.DB.ExecContext(context.Background(),
		`update river_job set state = 'completed', attempt = 1, finalized_at = scheduled_at where id = $1`, id); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) state(t *testing.T, id string) store.ErrorRetro {
	t.Helper()
	st, _, err := r.s.GetErrorRetro(context.Background(), r.s.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func near(a, b time.Time) bool { d := a.Sub(b); return d > -time.Millisecond && d < time.Millisecond }

// A burst of 10 errors, in one batch or in several, schedules one
// retro_error 6 s out; once it ran, the next error schedules the second no
// sooner than 60 s after the first; the third comes the same way and the
// fourth is refused by the count. Subagent sessions get none.
func TestBurstSpacingAndCap(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		r := newRig(t, s)
		t0 := r.now

		r.start(t, "one-batch", true)
		r.ingest(t, r.errs("one-batch", 10)...)
		r.start(t, "many-batches", true)
		burst := r.errs("many-batches", 10)
		r.ingest(t, burst[:3]...)
		r.now = t0.Add(2 * time.Second)
		r.ingest(t, burst[3:7]...)
		r.now = t0.Add(4 * time.Second)
		for _, e := range burst[7:] {
			r.ingest(t, e)
		}
		r.start(t, "subagent", false)
		r.ingest(t, r.errs("subagent", 3)...)

		for _, id := range []string{"one-batch", "many-batches"} {
			js := r.jobs(t, id)
			if len(js) != 1 || js[0].State != rivertype.JobStateScheduled || !near(js[0].ScheduledAt, t0.Add(6*time.Second)) ||
				js[0].Queue != "llm" || js[0].MaxAttempts != 5 {
				for _, j := range js {
					t.Logf("job %d %s %s at %v", j.ID, j.State, j.Queue, j.ScheduledAt)
				}
				t.Fatalf("%s: %d retro_error jobs, want 1 scheduled at %v on llm with 5 attempts", id, len(js), t0.Add(6*time.Second))
			}
			if st := r.state(t, id); st.Count != 1 || !near(st.LastScheduledAt, t0.Add(6*time.Second)) {
				t.Fatalf("%s: error_retros %+v", id, st)
			}
		}
		if js := r.jobs(t, "subagent"); len(js) != 0 {
			t.Fatalf("subagent session got %d retro_error jobs", len(js))
		}
		if st := r.state(t, "subagent"); st.Count != 0 {
			t.Fatalf("subagent error_retros %+v", st)
		}

		// The first ran; an error 10 s in waits for the 60 s gap.
		first := r.jobs(t, "one-batch")[0]
		r.complete(t, first.ID)
		r.now = t0.Add(10 * time.Second)
		r.ingest(t, r.errs("one-batch", 4)...)
		js := r.jobs(t, "one-batch")
		if len(js) != 2 || js[1].State != rivertype.JobStateScheduled || js[1].ScheduledAt.Sub(first.ScheduledAt) < 60*time.Second ||
			!near(js[1].ScheduledAt, t0.Add(66*time.Second)) {
			t.Fatalf("after the first ran: %d jobs, second at %v; want one more at %v", len(js), js[len(js)-1].ScheduledAt, t0.Add(66*time.Second))
		}
		if st := r.state(t, "one-batch"); st.Count != 2 || !near(st.LastScheduledAt, t0.Add(66*time.Second)) {
			t.Fatalf("error_retros after the second %+v", st)
		}

		// The third, long after: the debounce alone.
		r.complete(t, js[1].ID)
		r.now = t0.Add(5 * time.Minute)
		r.ingest(t, r.errs("one-batch", 2)...)
		js = r.jobs(t, "one-batch")
		if len(js) != 3 || !near(js[2].ScheduledAt, t0.Add(5*time.Minute+6*time.Second)) {
			t.Fatalf("third: %d jobs, want 3 with the last at %v", len(js), t0.Add(5*time.Minute+6*time.Second))
		}

		// The fourth is refused: nothing inserted, the row unchanged.
		r.complete(t, js[2].ID)
		r.now = t0.Add(time.Hour)
		r.ingest(t, r.errs("one-batch", 5)...)
		if js := r.jobs(t, "one-batch"); len(js) != 3 {
			t.Fatalf("a fourth retro_error was inserted: %d jobs", len(js))
		}
		if st := r.state(t, "one-batch"); st.Count != 3 || !near(st.LastScheduledAt, t0.Add(5*time.Minute+6*time.Second)) {
			t.Fatalf("error_retros after the refusal %+v", st)
		}
		// The count's rows: one per job scheduled, newest first.
		rows, err := s.ErrorRetroSchedules(context.Background(), s.DB, "one-batch", 0)
		if err != nil || len(rows) != 3 {
			t.Fatalf("scheduling rows %+v, %v", rows, err)
		}
		for i, row := range rows {
			j := js[2-i]
			if row.JobID != j.ID || !near(row.Due, j.ScheduledAt) || row.Folded {
				t.Fatalf("row %d %+v, want job %d due %v", i, row, j.ID, j.ScheduledAt)
			}
		}
		if rows, _ := s.ErrorRetroSchedules(context.Background(), s.DB, "subagent", 0); len(rows) != 0 {
			t.Fatalf("subagent scheduling rows %+v", rows)
		}
	})
}

// The hook writes nothing when the ingest transaction rolls back.
func TestHookRollsBackWithIngest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := newRig(t, s)
		r.start(t, "s1", true)
		hook := &retroerror.Hook{Store: s}
		e := r.errs("s1", 1)[0]
		e.Time = e.Time.UTC()
		boom := fmt.Errorf("boom")
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if err := hook.AgentError(ctx, tx, r.client, e); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("InTx = %v", err)
		}
		if js := r.jobs(t, "s1"); len(js) != 0 {
			t.Fatalf("%d jobs after a rollback", len(js))
		}
		if _, ok, _ := s.GetErrorRetro(ctx, s.DB, "s1"); ok {
			t.Fatal("error_retros row after a rollback")
		}
		if rows, _ := s.ErrorRetroSchedules(ctx, s.DB, "s1", 0); len(rows) != 0 {
			t.Fatalf("scheduling rows after a rollback: %+v", rows)
		}
	})
}

var answer = retro.Output{
	Lessons: []retro.Entry{{Text: "go test failed with 'no required module provides package' -> ran outside the module root -> cd to the directory holding go.mod first", Importance: 7}},
	Facts:   []retro.Entry{{Text: "the repo uses pnpm, not npm"}},
	Handoff: []string{"go test failed outside the module root.", "cd to the go.mod directory.", "Next: rerun the tests."},
}

// A retro_error job runs retro_session's pipeline with the error-focused
// excerpt and applies the answer.
func TestWorkerApplies(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		b, _ := json.Marshal(answer)
		l := llmtest.New(t, s, llmtest.Options{Fake: fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{{Kind: "retro_error",
			Response: &fakeds.Response{Content: string(b)}}}}}})
		reg := engine.NewRegistry(map[string]config.JobOverride{"retro_error": {Backoff: config.Duration(10 * time.Millisecond), MaxAttempts: 2}})
		engine.Add(reg, retroerror.Spec, &retroerror.Worker{Store: s, LLM: l.LLM, Logger: enginetest.Logger()})
		client := enginetest.NewClient(t, s, reg, l.Config, true)
		evs := enginetest.Events(t, client)
		if err := client.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.Stop(context.Background()) })

		t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		mk := func(n int, typ events.Type, payload string) events.Event {
			return events.Event{ID: fmt.Sprintf("s1-%d", n), Type: typ, SessionID: "s1", Workspace: ws,
				Time: t0.Add(time.Duration(n) * time.Second), Payload: json.RawMessage(payload)}
		}
		if _, err := ingest.New(s, ingest.Hooks{}).IngestBatch(ctx, []events.Event{
			mk(0, events.SessionStart, `{"title":"fix the build","primary":true}`),
			mk(1, events.UserMessage, `{"text":"run the tests"}`),
			mk(2, events.Error, `{"message":"no required module provides package","code":"go-test"}`),
		}, store.SourcePush); err != nil {
			t.Fatal(err)
		}
		res, err := client.Insert(ctx, retroerror.Args{SessionID: "s1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if row := enginetest.WaitFinal(t, evs, res.Job.ID); row.State != rivertype.JobStateCompleted {
			t.Fatalf("retro_error job %d ended %s: %v", res.Job.ID, row.State, row.Errors)
		}
		ms, err := s.ListMemories(ctx, s.DB, store.MemoryFilter{Workspaces: []string{ws}, All: true, Oldest: true})
		if err != nil || len(ms) != 2 {
			t.Fatalf("memories %+v, %v; want 2", ms, err)
		}
		for _, m := range ms {
			if m.Origin != "retro" || m.JobID != res.Job.ID || m.SessionID != "s1" {
				t.Fatalf("memory %+v", m)
			}
		}
		reqs := l.Fake.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d model calls, want 1", len(reqs))
		}
		user := reqs[0].Messages[len(reqs[0].Messages)-1].Content
		if !strings.Contains(user, "ERRORS") || !strings.Contains(user, "no required module provides package") ||
			strings.Index(user, "ERRORS") > strings.Index(user+"TRANSCRIPT", "TRANSCRIPT") {
			t.Fatalf("excerpt is not error-focused:\n%s", user)
		}
		if run, ok, _ := s.GetRetroRun(ctx, s.DB, res.Job.ID); !ok || !strings.Contains(run.Counts, `"added":2`) {
			t.Fatalf("retro run %+v, %v", run, ok)
		}
	})
}

// Now queues one retro of a session with something to learn, runs no
// sooner than the budget's reset, answers a second ask with the waiting
// job, and queues nothing for a session with nothing to learn.
func TestNowQueuesOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := newFoldRig(t, s) // its client can queue retro_session
		h := &retroerror.Hook{Store: s, Logger: enginetest.Logger()}
		ask := func(id string, notBefore time.Time) retroerror.Asked {
			t.Helper()
			sess, err := s.GetSession(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var a retroerror.Asked
			if err := s.InTx(ctx, func(tx *sql.Tx) (err error) {
				a, err = h.Now(ctx, tx, r.client, sess, notBefore)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return a
		}
		r.start(t, "empty", true)
		if a := ask("empty", time.Time{}); a.Enqueued || a.JobID != 0 || !strings.Contains(a.Message, "no event to learn from yet") {
			t.Fatalf("a session with nothing to learn: %+v", a)
		}

		r.start(t, "s1", true)
		r.ingest(t, r.event("s1", events.UserMessage, `{"text":"fix the build"}`))
		reset := r.now.Add(2 * time.Hour)
		first := ask("s1", reset)
		if !first.Enqueued || first.JobID == 0 || !first.At.Equal(reset) || first.State != string(rivertype.JobStateScheduled) ||
			!strings.Contains(first.Message, "; it runs at "+reset.Format(time.RFC3339)) {
			t.Fatalf("first ask: %+v", first)
		}
		if st := r.state(t, "s1"); !st.LastScheduledAt.Equal(reset) {
			t.Fatalf("the ask was not recorded as the session's latest retro: %+v", st)
		}
		again := ask("s1", time.Time{})
		if again.Enqueued || again.JobID != first.JobID || !strings.Contains(again.Message, "already queued") {
			t.Fatalf("second ask: %+v", again)
		}
	})
}
