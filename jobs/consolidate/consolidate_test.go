package consolidate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/consolidate"
	"github.com/mullhq/mull/jobs/consolidate/consolidatetest"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/workflows"
)

const ws = "/home/dev/proj"

type env struct {
	s      *store.Store
	fake   *fakeds.Server
	cfg    config.Config
	reg    *engine.Registry
	client *engine.Client
	events <-chan *river.Event
	set    consolidate.Settings
}

// setup builds the consolidate jobs against the fake DeepSeek; start
// starts a working client.
func setup(t testing.TB, s *store.Store, set consolidate.Settings) *env {
	t.Helper()
	l := llmtest.New(t, s, llmtest.Options{CallTimeout: 10 * time.Second,
		Edit: func(c *config.Config) { c.Workers.Queues = map[string]int{"default": 4, "llm": 2, "maintenance": 1} }})
	fast := config.JobOverride{Backoff: config.Duration(10 * time.Millisecond)}
	reg := engine.NewRegistry(map[string]config.JobOverride{"consolidate": fast, "consolidate_merge": fast, "consolidate_derive": fast})
	runner := workflows.New(s, enginetest.Logger())
	workflows.Register(reg, runner)
	consolidate.Register(reg, consolidate.Deps{Store: s, LLM: l.LLM, Runner: runner, Logger: enginetest.Logger(), Settings: set})
	return &env{s: s, fake: l.Fake, cfg: l.Config, reg: reg, set: set}
}

func (e *env) start(t testing.TB) {
	t.Helper()
	e.client = enginetest.NewClient(t, e.s, e.reg, e.cfg, true)
	e.events = enginetest.Events(t, e.client)
	if err := e.client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.client.Stop(context.Background()) })
}

// seed stores memories of one kind, recorded a day ago, and returns their ids.
func seed(t testing.TB, s *store.Store, kind memory.Kind, texts ...string) []int64 {
	t.Helper()
	var ids []int64
	err := s.InTx(context.Background(), func(tx *sql.Tx) error {
		for _, text := range texts {
			id, err := s.InsertMemory(context.Background(), tx, store.Memory{Workspace: ws, Kind: string(kind), Text: text,
				TextNorm: memory.Normalize(text), Importance: 5, Src: "agent", Origin: "retro",
				RecordedAt: time.Now().UTC().Add(-24 * time.Hour)})
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// filler is n distinct memories that cluster with nothing: ten words each
// drawn from a vocabulary of 2000, so two share hardly a word pair.
func filler(n int) []string { return consolidatetest.Texts(n) }

// run enqueues a planner and waits for it; when it started a run, it
// waits for the run's derive step too and returns the run's counts.
func (e *env) run(t testing.TB, args consolidate.Args) (store.ConsolidateState, *consolidate.Counts) {
	t.Helper()
	ctx := context.Background()
	res, err := e.client.Insert(ctx, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if row := enginetest.WaitFinal(t, e.events, res.Job.ID); row.State != rivertype.JobStateCompleted {
		t.Fatalf("planner %d ended %s: %v", res.Job.ID, row.State, row.Errors)
	}
	st, _, err := e.s.GetConsolidateState(ctx, e.s.DB, args.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	if st.LastJobID != res.Job.ID {
		t.Fatalf("state's last job %d, want %d", st.LastJobID, res.Job.ID)
	}
	// The derive step may have replaced "started run X: …" with
	// "finished run X: …" already; either way last_run_id is X, and it is
	// empty when the planner skipped.
	noted := ""
	if strings.HasPrefix(st.LastNote, "started run ") || strings.HasPrefix(st.LastNote, "finished run ") {
		noted = strings.TrimSuffix(strings.Fields(st.LastNote)[2], ":")
	}
	if st.LastRunID != noted {
		t.Fatalf("last_run_id %q, but the note %q names %q", st.LastRunID, st.LastNote, noted)
	}
	if st.LastRunID == "" {
		return st, nil
	}
	return e.waitRun(t, st.LastRunID)
}

func (e *env) waitRun(t testing.TB, runID string) (store.ConsolidateState, *consolidate.Counts) {
	t.Helper()
	ctx := context.Background()
	// The derive step may have finished before its planner's event came
	// (a run without chunks starts with it): look before waiting.
	run, err := e.s.GetWorkflowRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status == store.WorkflowRunning {
		ev := enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
			if ev.Job.Kind != "consolidate_derive" || !strings.Contains(string(ev.Job.EncodedArgs), runID) {
				return false
			}
			return ev.Job.State == rivertype.JobStateCompleted || ev.Job.State == rivertype.JobStateDiscarded ||
				ev.Job.State == rivertype.JobStateCancelled
		})
		if ev.Job.State != rivertype.JobStateCompleted {
			t.Fatalf("derive of %s ended %s: %v", runID, ev.Job.State, ev.Job.Errors)
		}
		if run, err = e.s.GetWorkflowRun(ctx, runID); err != nil {
			t.Fatal(err)
		}
	}
	if run.Status != store.WorkflowSucceeded {
		t.Fatalf("run %s is %s", runID, run.Status)
	}
	st, _, err := e.s.GetConsolidateState(ctx, e.s.DB, ws)
	if err != nil {
		t.Fatal(err)
	}
	if st.LastRunID != runID || !strings.HasPrefix(st.LastNote, "finished run "+runID+":") {
		t.Fatalf("after run %s: last_run_id %q, note %q", runID, st.LastRunID, st.LastNote)
	}
	var c consolidate.Counts
	if err := json.Unmarshal([]byte(st.LastCounts), &c); err != nil {
		t.Fatal(err)
	}
	return st, &c
}

func all(t testing.TB, s *store.Store) map[int64]store.Memory {
	t.Helper()
	rows, err := s.ListMemories(context.Background(), s.DB, store.MemoryFilter{Workspaces: []string{ws}, All: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]store.Memory{}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out
}

func live(ms map[int64]store.Memory, kind memory.Kind) []store.Memory {
	var out []store.Memory
	for _, m := range ms {
		if m.Kind == string(kind) && m.InvalidAt.IsZero() && !m.Quarantined {
			out = append(out, m)
		}
	}
	return out
}

// A run merges planted duplicates into one memory each (sources invalid,
// linked), rejects the merge that would drop a port number, derives
// principles, hypotheses and prefetch, and advances the watermark; a
// second run finds nothing new to merge and adds no second set.
func TestConsolidateMergesRejectsAndDerives(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := setup(t, s, consolidate.Settings{})
		e.start(t)
		seed(t, s, memory.Fact, filler(12)...)
		pnpm := seed(t, s, memory.Fact, "the repo uses pnpm, not npm", "This repo uses pnpm, not npm!")
		pg := seed(t, s, memory.Lesson, "psql failed to connect -> postgres listens on port 5433 in dev -> pass -p 5433",
			"psql failed to connect -> postgres listens on port 5433 in dev -> pass -p 5433 to psql")
		// The fake merges a cluster into its longest text, which lacks 8080.
		lossy := seed(t, s, memory.Fact, "the api server listens on port 8080 in production",
			"the api server listens on port 8081 in production (checked)")
		// The agent verified one pnpm source after every record: its merge
		// keeps that verification and its verifier. No one verified the
		// pg sources: their merge carries a record time, said so.
		verified := time.Now().UTC().Add(time.Minute)
		if ok, err := s.VerifyMemory(context.Background(), s.DB, pnpm[0], verified, "user", store.ActorAgent); !ok || err != nil {
			t.Fatalf("verify %d: %v %v", pnpm[0], ok, err)
		}

		st, c := e.run(t, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual, Requested: "1"})
		if c == nil {
			t.Fatalf("no run started: %s", st.LastNote)
		}
		if c.Merged != 2 || c.Superseded != 4 || c.Rejected != 1 || c.Principles != 3 || c.Hypotheses != 1 || c.Prefetch != 3 || !c.Derived {
			t.Fatalf("counts %+v", c)
		}
		if c.Tokens.Calls < 2 || c.Tokens.Prompt == 0 {
			t.Fatalf("tokens %+v", c.Tokens)
		}
		ms := all(t, s)
		for _, group := range [][]int64{pnpm, pg} {
			by := ms[group[0]].SupersededBy
			for _, id := range group {
				m := ms[id]
				if m.InvalidAt.IsZero() || m.SupersededBy == 0 || m.SupersededBy != by || m.InvalidReason != "merged by consolidate" {
					t.Fatalf("source %d not superseded: %+v", id, m)
				}
			}
			merged := ms[by]
			if merged.Origin != "sleep" || !merged.InvalidAt.IsZero() || merged.Text != ms[group[1]].Text {
				t.Fatalf("merged memory %+v", merged)
			}
		}
		if m := ms[ms[pnpm[0]].SupersededBy]; m.VerifiedBy != store.ActorAgent || !m.VerifiedAt.Equal(verified.Truncate(time.Microsecond)) {
			t.Fatalf("pnpm's merge verified at %v by %q, want %v by the agent", m.VerifiedAt, m.VerifiedBy, verified)
		}
		if m := ms[ms[pg[0]].SupersededBy]; m.VerifiedBy != store.VerifiedByMerge || !m.VerifiedAt.Equal(ms[pg[1]].RecordedAt) {
			t.Fatalf("pg's merge verified at %v by %q, want its newest source's record time %v", m.VerifiedAt, m.VerifiedBy, ms[pg[1]].RecordedAt)
		}
		for _, id := range lossy {
			if m := ms[id]; !m.InvalidAt.IsZero() {
				t.Fatalf("lossy cluster's source %d was invalidated: %+v", id, m)
			}
		}
		if n := len(live(ms, memory.Principle)); n != 3 {
			t.Fatalf("%d principles", n)
		}
		if st.RunID != "" || st.Watermark != lossy[1] || st.SessionsSince != 0 || st.LastFinishedAt.IsZero() {
			t.Fatalf("state after the run %+v", st)
		}

		// Again: nothing merges; the derived set is kept, not doubled.
		_, c2 := e.run(t, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual, Requested: "2"})
		if c2 == nil || c2.Merged != 0 || c2.Rejected != 0 {
			t.Fatalf("second run %+v", c2)
		}
		ms = all(t, s)
		for _, k := range []memory.Kind{memory.Principle, memory.Hypothesis, memory.Prefetch} {
			if n, want := len(live(ms, k)), map[memory.Kind]int{memory.Principle: 3, memory.Hypothesis: 1, memory.Prefetch: 3}[k]; n != want {
				t.Fatalf("%d live %s after the second run, want %d", n, k, want)
			}
		}
		// What consolidation wrote is not news: a cron run (no cooldown
		// here) finds nothing new, and the sweep passes the workspace by.
		st, c = e.run(t, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonCron})
		if c != nil || !strings.HasPrefix(st.LastNote, "skipped: nothing new since memory ") {
			t.Fatalf("cron run after consolidating: %q", st.LastNote)
		}
		if due, err := s.WorkspacesWithNewMemories(context.Background(), s.DB); err != nil || len(due) != 0 {
			t.Fatalf("due after consolidating: %q, %v", due, err)
		}
	})
}

// The cooldown stops a cron run but not a manual one; a run in flight
// stops both; a dry run plans without starting anything.
func TestConsolidateCooldownInFlightAndDryRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := setup(t, s, consolidate.Settings{Cooldown: 6 * time.Hour})
		e.start(t)
		seed(t, s, memory.Fact, filler(10)...)
		seed(t, s, memory.Fact, "the repo uses pnpm, not npm", "This repo uses pnpm, not npm!")

		st, c := e.run(t, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonCron})
		if c == nil || c.Merged != 1 {
			t.Fatalf("first cron run: %s %+v", st.LastNote, c)
		}
		seed(t, s, memory.Fact, "a new fact after the run")
		st, c = e.run(t, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonCron})
		if c != nil || !strings.HasPrefix(st.LastNote, "skipped: cooldown until ") {
			t.Fatalf("cron run inside the cooldown: %q", st.LastNote)
		}
		st, c = e.run(t, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual, DryRun: true, Requested: "d"})
		if c != nil || !strings.HasPrefix(st.LastNote, "dry run: ") || st.RunID != "" {
			t.Fatalf("dry run: %+v", st)
		}
		// A run in flight blocks even a manual one; once it has failed, a
		// new one starts.
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if err := s.InsertWorkflowRun(ctx, tx, store.WorkflowRun{ID: "wf_inflight", Name: "consolidate",
				Status: store.WorkflowRunning, Input: json.RawMessage("{}")}); err != nil {
				return err
			}
			st, err := s.LockConsolidateState(ctx, tx, ws)
			if err != nil {
				return err
			}
			st.RunID = "wf_inflight"
			return s.PutConsolidateState(ctx, tx, st)
		})
		if err != nil {
			t.Fatal(err)
		}
		st, c = e.run(t, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual, Requested: "m1"})
		if c != nil || st.LastNote != "skipped: run wf_inflight is still in flight" {
			t.Fatalf("manual run beside one in flight: %q", st.LastNote)
		}
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			return s.SetWorkflowRunStatus(ctx, tx, "wf_inflight", "failed", "step merge_001: gave up")
		})
		if err != nil {
			t.Fatal(err)
		}
		st, c = e.run(t, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual, Requested: "m2"})
		if c == nil {
			t.Fatalf("manual run after the failed one: %q", st.LastNote)
		}

		// The sweep: one cron planner per library with new memories and
		// no cooldown; this workspace is inside its cooldown.
		other := "/home/dev/other"
		if _, err := s.InsertMemory(ctx, s.DB, store.Memory{Workspace: other, Kind: "fact", Text: "x uses y",
			TextNorm: "x uses y", Origin: "tool", RecordedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
		seed(t, s, memory.Fact, "one more new fact")
		sub, cancel := e.client.Subscribe(river.EventKindJobCompleted)
		defer cancel()
		res, err := e.client.Insert(ctx, consolidate.SweepArgs{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		enginetest.WaitFinal(t, e.events, res.Job.ID)
		ev := enginetest.WaitFor(t, sub, func(ev *river.Event) bool { return ev.Job.Kind == "consolidate" })
		var a consolidate.Args
		if err := json.Unmarshal(ev.Job.EncodedArgs, &a); err != nil || a.Workspace != other || a.Reason != consolidate.ReasonCron {
			t.Fatalf("sweep enqueued %s (%v)", ev.Job.EncodedArgs, err)
		}
		listed, err := e.client.JobList(ctx, river.NewJobListParams().Kinds("consolidate").First(100))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, j := range listed.Jobs {
			var a consolidate.Args
			if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
				t.Fatal(err)
			}
			if a.Reason == consolidate.ReasonCron && j.ID > res.Job.ID {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("sweep enqueued %d planners, want 1 (only %s)", n, other)
		}
	})
}

// The Nth session end since the last run enqueues one planner, scheduled
// later; ends inside the cooldown do not; the sweep enqueues one planner
// per library with new memories.
func TestConsolidateTriggers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := setup(t, s, consolidate.Settings{AfterSessions: 3, Cooldown: time.Hour})
		client := enginetest.NewClient(t, s, e.reg, e.cfg, false)
		hook := &consolidate.Hook{Store: s, Settings: e.set}
		end := func(primary bool) {
			t.Helper()
			err := s.InTx(ctx, func(tx *sql.Tx) error {
				return hook.SessionEnded(ctx, tx, client, store.Session{ID: "s", Workspace: ws, Primary: primary})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		planners := func() []*rivertype.JobRow {
			t.Helper()
			res, err := client.JobList(ctx, river.NewJobListParams().Kinds("consolidate").First(100))
			if err != nil {
				t.Fatal(err)
			}
			return res.Jobs
		}
		end(true)
		end(false) // a subagent's end does not count
		end(true)
		if n := len(planners()); n != 0 {
			t.Fatalf("%d planners after 2 sessions", n)
		}
		end(true)
		jobs := planners()
		if len(jobs) != 1 || jobs[0].State != rivertype.JobStateScheduled || !jobs[0].ScheduledAt.After(time.Now().Add(4*time.Minute)) {
			t.Fatalf("planners after 3 sessions: %+v", jobs)
		}
		end(true) // the 4th: the waiting planner absorbs it
		if n := len(planners()); n != 1 {
			t.Fatalf("%d planners after 4 sessions", n)
		}
		st, _, err := s.GetConsolidateState(ctx, s.DB, ws)
		if err != nil || st.SessionsSince != 4 {
			t.Fatalf("state %+v, %v", st, err)
		}
		// Inside the cooldown, ends only count.
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			st.LastStartedAt, st.SessionsSince = s.Now(), 0
			return s.PutConsolidateState(ctx, tx, st)
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.JobDeleteMany(ctx, river.NewJobDeleteManyParams().Kinds("consolidate")); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			end(true)
		}
		if n := len(planners()); n != 0 {
			t.Fatalf("%d planners inside the cooldown", n)
		}
		// Past the cooldown, a run in flight holds the trigger back; once
		// that run has failed it no longer does.
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			if err := s.InsertWorkflowRun(ctx, tx, store.WorkflowRun{ID: "wf_busy", Name: "consolidate",
				Status: store.WorkflowRunning, Input: json.RawMessage("{}")}); err != nil {
				return err
			}
			st, err := s.LockConsolidateState(ctx, tx, ws)
			if err != nil {
				return err
			}
			st.LastStartedAt, st.SessionsSince, st.RunID = s.Now().Add(-2*time.Hour), 0, "wf_busy"
			return s.PutConsolidateState(ctx, tx, st)
		})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			end(true)
		}
		if n := len(planners()); n != 0 {
			t.Fatalf("%d planners while a run is in flight", n)
		}
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			return s.SetWorkflowRunStatus(ctx, tx, "wf_busy", "failed", "step merge_001: gave up")
		}); err != nil {
			t.Fatal(err)
		}
		end(true)
		if n := len(planners()); n != 1 {
			t.Fatalf("%d planners after the run in flight failed, want 1", n)
		}
	})
}

// A merge whose first call fails with a 500 is retried by River; the run's
// tokens count every call its steps made, the failed one too, as the
// llm_calls records of the run do.
func TestConsolidateCountsFailedCalls(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := setup(t, s, consolidate.Settings{})
		if err := e.fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{
			{Kind: consolidate.MergeArgs{}.Kind(), Times: 1, Fault: fakeds.FaultServerError, Message: "first merge fails"},
		}}); err != nil {
			t.Fatal(err)
		}
		e.start(t)
		seed(t, s, memory.Fact, filler(10)...)
		seed(t, s, memory.Fact, "the repo uses pnpm, not npm", "This repo uses pnpm, not npm!")

		st, c := e.run(t, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual, Requested: "1"})
		if c == nil || c.Merged != 1 || !c.Derived {
			t.Fatalf("run: %s %+v", st.LastNote, c)
		}
		sums, err := s.SumLLMCalls(ctx, "workspace", store.LLMCallFilter{Workspace: ws})
		if err != nil || len(sums) != 1 {
			t.Fatalf("llm calls: %+v %v", sums, err)
		}
		all := sums[0]
		// One chunk: the failed merge, its retry, the derive call.
		if all.Calls != 3 || all.Failed != 1 {
			t.Fatalf("recorded calls %+v, want 3 with 1 failed", all)
		}
		want := consolidate.Tokens{Calls: 3, Failed: 1, Prompt: all.PromptTokens, CacheHit: all.CacheHitTokens,
			Completion: all.CompletionTokens, CostNano: all.CostNanoUSD}
		if c.Tokens != want {
			t.Fatalf("run's tokens %+v, want the records' %+v", c.Tokens, want)
		}
	})
}
