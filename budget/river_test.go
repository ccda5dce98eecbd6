package budget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// callArgs is a stand-in LLM job: it reserves, "calls", and settles.
type callArgs struct{}

func (callArgs) Kind() string { return "budget_test_call" }

// callWorker maps the ledger's answers to River the way an LLM worker does:
// a refusal snoozes the job until its key resets.
type callWorker struct {
	river.WorkerDefaults[callArgs]
	ledger *budget.Ledger
}

func (w *callWorker) Work(ctx context.Context, job *river.Job[callArgs]) error {
	r, err := w.ledger.Reserve(ctx, budget.Request{JobID: job.ID, Kind: job.Kind, Workspace: "/w", Tokens: 300})
	var e *budget.ExhaustedError
	if errors.As(err, &e) {
		return river.JobSnooze(e.Wait)
	}
	if err != nil {
		return err
	}
	return w.ledger.Settle(ctx, r, budget.Usage{PromptTokens: 200, CompletionTokens: 50})
}

// TestLLMJobsSnoozeUntilTheReset starts 50 jobs at once against a key of
// 3000 tokens: about ten complete, the others are snoozed to the key's reset
// without using an attempt, and none reaches the dead letters.
func TestLLMJobsSnoozeUntilTheReset(t *testing.T) {
	const jobs, limit = 50, 3000
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		l, _ := newLedger(t, s, "Asia/Shanghai", map[string]config.Limit{"global": tokens(limit)})
		_, resetAt := l.Day(t0)
		wait := resetAt.Sub(t0) // the ledger's clock stands at t0

		reg := engine.NewRegistry(nil)
		engine.Add(reg, engine.Spec{MaxAttempts: 1}, &callWorker{ledger: l})
		cfg := enginetest.Config()
		cfg.Workers.Queues = map[string]int{"default": jobs}
		c := enginetest.Start(t, s, reg, cfg)
		events := enginetest.Events(t, c)

		params := make([]river.InsertManyParams, jobs)
		for i := range params {
			params[i] = river.InsertManyParams{Args: callArgs{}}
		}
		before := time.Now()
		if _, err := c.InsertMany(ctx, params); err != nil {
			t.Fatal(err)
		}
		seen := map[int64]rivertype.JobState{}
		for len(seen) < jobs {
			ev := enginetest.WaitFor(t, events, func(*river.Event) bool { return true })
			if ev.Kind != river.EventKindJobCompleted && ev.Kind != river.EventKindJobSnoozed {
				t.Fatalf("job %d: event %s, state %s, errors %v", ev.Job.ID, ev.Kind, ev.Job.State, ev.Job.Errors)
			}
			seen[ev.Job.ID] = ev.Job.State
		}
		after := time.Now()

		res, err := c.JobList(ctx, river.NewJobListParams().Kinds("budget_test_call").First(jobs+1))
		if err != nil {
			t.Fatal(err)
		}
		states := map[rivertype.JobState]int{}
		for _, j := range res.Jobs {
			states[j.State]++
			if j.State != rivertype.JobStateScheduled {
				continue
			}
			if j.Attempt != 0 || j.ScheduledAt.Before(before.Add(wait)) || j.ScheduledAt.After(after.Add(wait)) {
				t.Fatalf("snoozed job %d: attempt %d, scheduled %s; want attempt 0 and %s after it ran",
					j.ID, j.Attempt, j.ScheduledAt, wait)
			}
		}
		g := report(t, l, "")["global"]
		t.Logf("states %v; global %+v", states, g)
		done, snoozed := states[rivertype.JobStateCompleted], states[rivertype.JobStateScheduled]
		if done+snoozed != jobs || done < limit/300 || g.SpentTokens != int64(done*250) || g.SpentTokens > limit ||
			g.ReservedTokens != 0 || g.Refused != int64(snoozed) {
			t.Fatalf("states %v (want only completed and scheduled, at least %d completed); global %+v", states, limit/300, g)
		}
	})
}
