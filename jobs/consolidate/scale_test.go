package consolidate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/jobs/consolidate"
	"github.com/mullhq/mull/jobs/consolidate/consolidatetest"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Consolidating a library of 10,000 memories and killing the workers
// mid-run (after the third chunk) then starting new ones finishes the
// chunks left: every chunk's merge is answered exactly once, the run
// merges every planted pair and rejects the lossy one.
func TestConsolidateResumesAfterKill(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := setup(t, s, consolidate.Settings{MinMemories: 1000000})
		e.cfg.Workers.Queues["llm"] = 1
		if err := e.fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{
			{Kind: "consolidate_merge", Fault: fakeds.FaultSlow, Delay: 150 * time.Millisecond},
		}}); err != nil {
			t.Fatal(err)
		}
		pairs := consolidatetest.Library(t, s, ws, 10000)
		e.start(t)
		res, err := e.client.Insert(ctx, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual, Requested: "k"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		enginetest.WaitFinal(t, e.events, res.Job.ID)
		st, _, err := s.GetConsolidateState(ctx, s.DB, ws)
		if err != nil || st.RunID == "" {
			t.Fatalf("no run started: %+v %v", st, err)
		}
		runID := st.RunID
		for range 3 {
			enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
				return ev.Job.Kind == "consolidate_merge" && ev.Job.State == rivertype.JobStateCompleted
			})
		}
		stopCtx, cancel := context.WithTimeout(ctx, testwait.Patience(t))
		defer cancel()
		if err := e.client.StopAndCancel(stopCtx); err != nil {
			t.Fatal(err)
		}
		run, err := s.GetWorkflowRun(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		done, total := 0, 0
		for _, step := range run.Steps {
			if strings.HasPrefix(step.Name, "merge_") {
				total++
				if step.Status == store.WorkflowStepSucceeded {
					done++
				}
			}
		}
		if done == total {
			t.Fatalf("all %d chunks finished before the kill; the test needs a slower fake", total)
		}
		t.Logf("killed after %d of %d chunks", done, total)

		e.start(t)
		_, c := e.waitRun(t, runID)
		if c.Merged != pairs || c.Rejected != 1 || c.Chunks != total {
			t.Fatalf("counts %+v, want %d merged in %d chunks", c, pairs, total)
		}
		calls, err := s.ListLLMCalls(ctx, store.LLMCallFilter{Kind: "consolidate_merge", Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		ok := map[int64]int{}
		for _, call := range calls {
			if call.Outcome == "ok" {
				ok[call.JobID]++
			}
		}
		run, err = s.GetWorkflowRun(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range run.Steps {
			if strings.HasPrefix(step.Name, "merge_") && ok[step.JobID] != 1 {
				t.Fatalf("step %s (job %d) was answered %d times", step.Name, step.JobID, ok[step.JobID])
			}
		}
		if len(ok) != total {
			t.Fatalf("%d merge jobs were answered, want %d", len(ok), total)
		}
	})
}

// BenchmarkConsolidate runs a whole consolidation of a synthetic library
// of 1k, 5k and 10k memories (10% planted duplicate pairs) against the
// fake DeepSeek, and reports the LLM calls and tokens it took: they should
// grow about linearly with the library.
//
//	go test -run '^$' -bench Consolidate -benchtime 1x ./jobs/consolidate/
func BenchmarkConsolidate(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				s := storetest.New(b, store.SQLite)
				e := setup(b, s, consolidate.Settings{})
				pairs := consolidatetest.Library(b, s, ws, n)
				e.start(b)
				b.StartTimer()
				st, c := e.run(b, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual, Requested: "b"})
				if c == nil {
					b.Fatalf("no run: %s", st.LastNote)
				}
				b.StopTimer()
				if c.Merged != pairs || c.Rejected != 1 {
					b.Fatalf("merged %d of %d planted pairs, rejected %d (want the lossy one)", c.Merged, pairs, c.Rejected)
				}
				b.ReportMetric(float64(c.Tokens.Calls), "calls")
				b.ReportMetric(float64(c.Tokens.Prompt), "prompt_tokens")
				b.ReportMetric(float64(c.Tokens.Completion), "completion_tokens")
				b.ReportMetric(float64(c.Tokens.Prompt+c.Tokens.Completion)/float64(n), "tokens/memory")
				b.ReportMetric(float64(c.Chunks), "chunks")
			}
		})
	}
}
