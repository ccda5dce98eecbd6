package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/jobs/consolidate"
	"github.com/mullhq/mull/jobs/consolidate/consolidatetest"
	rules "github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// TestConsolidateSurvivesSIGKILL consolidates a synthetic library of 600
// memories (60 planted pairs) in 8 or more small chunks, one slow merge
// call at a time, kills the worker in the middle of a merge call after
// three chunks finished, starts another, and checks the run finishes exactly right: every planted pair
// merged and the lossy one rejected, each chunk answered once, the
// watermark advanced and the run cleared from the workspace's state.
func TestConsolidateSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills worker processes")
	}
	script := &fakeds.Script{Rules: []fakeds.Rule{
		{Kind: "consolidate_merge", Fault: fakeds.FaultSlow, Delay: 300 * time.Millisecond},
	}}
	label := func(r *http.Request, _ []byte) string { return r.Header.Get("X-Mull-Job-Kind") }
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			start := time.Now()
			ctx := context.Background()
			r := newKillRig(t, dialect, script, label)
			pairs := consolidatetest.Library(t, r.store, killWS, 600)
			a := r.manage(t)
			rng := killRNG(t)

			w := r.start(t)
			if code, out, errOut := mull(t, ctx, append(r.base, "consolidate", "run", killWS, "--no-wait")...); code != 0 {
				t.Fatalf("consolidate run --no-wait: exit %d\n%s%s", code, out, errOut)
			}
			// One LLM call at a time: the fourth merge call comes after the
			// third chunk committed.
			for range 4 {
				waitSignal(t, r.tap.arrived, "consolidate_merge")
			}
			after := randomDelay(rng, 150*time.Millisecond)
			kill(t, w)
			st, _, err := r.store.GetConsolidateState(ctx, r.store.DB, killWS)
			if err != nil || st.RunID == "" {
				t.Fatalf("no run in flight: %+v, %v", st, err)
			}
			runner := workflows.New(r.store, testLogger())
			run, err := runner.Get(ctx, st.RunID)
			if err != nil {
				t.Fatal(err)
			}
			done, total := mergeSteps(run)
			if total < 8 || done < 3 || done == total {
				t.Fatalf("killed with %d of %d chunks done; want at least 3 of 8 or more, and not all", done, total)
			}
			t.Logf("killed %s into the 4th merge call, %d of %d chunks done", after, done, total)

			w = r.start(t)
			run = waitRunDone(t, runner, st.RunID)
			r.stop(t, w)
			if run.Status != store.WorkflowSucceeded {
				t.Fatalf("run ended %s: %s", run.Status, run.Error)
			}
			r.checkConsolidated(t, a, run, pairs, total)
			t.Logf("%s took %s", dialect, time.Since(start).Round(time.Millisecond))
		})
	}
}

// mergeSteps counts a run's merge steps, and those that succeeded.
func mergeSteps(run store.WorkflowRun) (done, total int) {
	for _, s := range run.Steps {
		if strings.HasPrefix(s.Name, "merge_") {
			total++
			if s.Status == store.WorkflowStepSucceeded {
				done++
			}
		}
	}
	return done, total
}

// checkConsolidated checks a finished run did each merge exactly once.
func (r *killRig) checkConsolidated(t *testing.T, a *app, run store.WorkflowRun, pairs, total int) {
	t.Helper()
	ctx := context.Background()
	for _, s := range run.Steps {
		if s.Status != store.WorkflowStepSucceeded {
			t.Errorf("step %s ended %s", s.Name, s.Status)
		}
	}
	var c consolidate.Counts
	if err := json.Unmarshal(run.Steps[len(run.Steps)-1].Output, &c); err != nil {
		t.Fatal(err)
	}
	if c.Merged != pairs || c.Superseded != 2*pairs || c.Rejected != 1 || c.Chunks != total || c.Stale != 0 {
		t.Fatalf("counts %+v, want %d merged, 1 rejected, in %d chunks", c, pairs, total)
	}
	calls, err := r.store.ListLLMCalls(ctx, store.LLMCallFilter{Kind: "consolidate_merge", Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	ok := map[int64]int{}
	for _, call := range calls {
		if call.Outcome == "ok" {
			ok[call.JobID]++
		}
	}
	rescued := 0
	for _, s := range run.Steps {
		if !strings.HasPrefix(s.Name, "merge_") {
			continue
		}
		if ok[s.JobID] != 1 {
			t.Errorf("step %s (job %d) has %d ok llm calls, want 1", s.Name, s.JobID, ok[s.JobID])
		}
		job, err := a.client.JobGet(ctx, s.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if job.Attempt > 1 {
			rescued++
		}
	}
	if len(ok) != total || rescued != 1 {
		t.Fatalf("%d merge jobs answered ok (want %d), %d retried (want the killed one)", len(ok), total, rescued)
	}
	r.checkMerged(t, pairs)
	var in consolidate.RunInput
	if err := json.Unmarshal(run.Input, &in); err != nil {
		t.Fatal(err)
	}
	st, _, err := r.store.GetConsolidateState(ctx, r.store.DB, killWS)
	if err != nil || st.RunID != "" || st.Watermark == 0 || st.Watermark != in.Watermark ||
		!strings.HasPrefix(st.LastNote, "finished run "+run.ID) {
		t.Fatalf("consolidate state %+v, %v; want the watermark at %d and no run", st, err, in.Watermark)
	}
}

// checkMerged checks the library: one merged memory per planted pair, and
// both of its sources superseded by it.
func (r *killRig) checkMerged(t *testing.T, pairs int) {
	t.Helper()
	ms, err := r.store.ListMemories(context.Background(), r.store.DB, store.MemoryFilter{Workspaces: []string{killWS}, All: true})
	if err != nil {
		t.Fatal(err)
	}
	merged, superseded := map[int64]bool{}, map[int64]int{}
	for _, m := range ms {
		if m.Origin == string(memory.OriginSleep) && !memory.Kind(m.Kind).SleepTime() {
			merged[m.ID] = true
		}
		if m.InvalidReason == rules.InvalidReason {
			superseded[m.SupersededBy]++
		}
	}
	if len(merged) != pairs || len(superseded) != pairs {
		t.Fatalf("%d merged memories superseding into %d, want %d of each", len(merged), len(superseded), pairs)
	}
	for id, n := range superseded {
		if !merged[id] || n != 2 {
			t.Fatalf("merged memory %d supersedes %d sources, want 2", id, n)
		}
	}
}
