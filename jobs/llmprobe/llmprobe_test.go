package llmprobe_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/llmprobe"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

type env struct {
	s      *store.Store
	fake   *fakeds.Server
	ledger *budget.Ledger
	client *engine.Client
	events <-chan *river.Event
}

// start runs llm_probe jobs against the fake DeepSeek with a ledger on s.
func start(t *testing.T, s *store.Store, script *fakeds.Script, limits map[string]config.Limit, maxTokens int) *env {
	t.Helper()
	l := llmtest.New(t, s, llmtest.Options{Fake: fakeds.Options{Script: script}, CallTimeout: time.Second, MaxTokens: maxTokens,
		// nil limits mean none, not the default per-workspace limit.
		Edit: func(c *config.Config) { c.Budget.Limits = limits }})
	reg := engine.NewRegistry(map[string]config.JobOverride{"llm_probe": {Backoff: config.Duration(10 * time.Millisecond)}})
	engine.Add(reg, llmprobe.Spec, &llmprobe.Worker{LLM: l.LLM, Logger: enginetest.Logger()})
	client := enginetest.NewClient(t, s, reg, l.Config, true)
	e := &env{s: s, fake: l.Fake, ledger: l.Ledger, client: client, events: enginetest.Events(t, client)}
	if err := client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })
	return e
}

func (e *env) insert(t *testing.T, prompt string) int64 {
	t.Helper()
	res, err := e.client.Insert(context.Background(), llmprobe.Args{Prompt: prompt, Workspace: "/w"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Job.ID
}

func rules(r ...fakeds.Rule) *fakeds.Script { return &fakeds.Script{Rules: r} }

// Each fault class ends as designed: retried to success, or in the dead
// letters with the reason.
func TestFaultsEndAsDesigned(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, rules(
			fakeds.Rule{Marker: "flaky-500", Fault: fakeds.FaultServerError, Times: 2},
			fakeds.Rule{Marker: "flaky-blank", Fault: fakeds.FaultBlank, Times: 1},
			fakeds.Rule{Marker: "flaky-truncated", Fault: fakeds.FaultTruncated, Times: 1},
			fakeds.Rule{Marker: "flaky-hang", Fault: fakeds.FaultHang, Times: 1},
			fakeds.Rule{Marker: "rate-limited", Fault: fakeds.FaultRateLimit, RetryAfter: 1, Times: 1},
			fakeds.Rule{Marker: "bad-request", Fault: fakeds.FaultBadRequest},
			fakeds.Rule{Marker: "bad-key", Fault: fakeds.FaultUnauthorized},
			fakeds.Rule{Marker: "bad-schema", Fault: fakeds.FaultWrongSchema},
		), nil, 200)
		tests := []struct {
			prompt   string
			state    rivertype.JobState
			attempts int
			errText  string
		}{
			{"flaky-500", rivertype.JobStateCompleted, 3, "http_500"},
			{"flaky-blank", rivertype.JobStateCompleted, 2, "blank"},
			{"flaky-truncated", rivertype.JobStateCompleted, 2, "truncated"},
			{"flaky-hang", rivertype.JobStateCompleted, 2, "timeout"},
			{"rate-limited", rivertype.JobStateCompleted, 1, ""}, // a snooze burns no attempt
			{"bad-request", rivertype.JobStateCancelled, 1, "HTTP 400"},
			{"bad-key", rivertype.JobStateCancelled, 1, "HTTP 401"},
			{"bad-schema", rivertype.JobStateCancelled, 3, "schema"},
		}
		ids := map[int64]int{}
		for i, tt := range tests {
			ids[e.insert(t, tt.prompt)] = i
		}
		for range tests {
			ev := enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
				_, ok := ids[ev.Job.ID]
				return ok && ev.Job.FinalizedAt != nil
			})
			tt := tests[ids[ev.Job.ID]]
			row := ev.Job
			if row.State != tt.state || row.Attempt != tt.attempts {
				t.Errorf("%s: %s after %d attempts (errors %v); want %s after %d", tt.prompt, row.State, row.Attempt, row.Errors, tt.state, tt.attempts)
			}
			if tt.errText != "" && (len(row.Errors) == 0 || !strings.Contains(row.Errors[0].Error, tt.errText)) {
				t.Errorf("%s: first error %v, want it to mention %q", tt.prompt, row.Errors, tt.errText)
			}
		}
	})
}

// 402 pauses the queue; the job waits without burning an attempt until an
// operator resumes the queue.
func TestBalanceExhaustedPausesTheQueue(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, rules(fakeds.Rule{Marker: "broke", Fault: fakeds.FaultBalance, Times: 1}), nil, 200)
		ctx := context.Background()
		id := e.insert(t, "broke")
		ev := enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
			return ev.Job.ID == id && ev.Kind == river.EventKindJobSnoozed
		})
		if ev.Job.State != rivertype.JobStateScheduled {
			t.Fatalf("after 402 the job is %s, want scheduled (snoozed)", ev.Job.State)
		}
		q, err := e.client.QueueGet(ctx, "llm")
		if err != nil || q.PausedAt == nil {
			t.Fatalf("llm queue not paused after 402: %+v, %v", q, err)
		}
		// The operator tops up and resumes; the job runs when its snooze ends
		// (made due now here rather than waiting out llm.PauseSnooze).
		if err := e.client.QueueResume(ctx, "llm", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := e.client.JobRetry(ctx, id); err != nil {
			t.Fatal(err)
		}
		row := enginetest.WaitFinal(t, e.events, id)
		if row.State != rivertype.JobStateCompleted {
			t.Fatalf("after resume the job ended %s: %v", row.State, row.Errors)
		}
	})
}

// 50 jobs started together against a global budget of a few thousand
// tokens: the settled total never exceeds it; the jobs that do not fit are
// snoozed to the reset, and none reach the dead letters.
func TestBudgetHoldsUnderFiftyJobs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		const limit = 3000
		e := start(t, s, nil, map[string]config.Limit{"global": {Tokens: limit}}, 60)
		ctx := context.Background()
		var params []river.InsertManyParams
		for i := range 50 {
			params = append(params, river.InsertManyParams{Args: llmprobe.Args{Prompt: "job " + string(rune('A'+i%26)), Workspace: "/w"}})
		}
		res, err := e.client.InsertMany(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		pending := map[int64]bool{}
		for _, r := range res {
			pending[r.Job.ID] = true
		}
		completed, snoozed := 0, 0
		for len(pending) > 0 {
			ev := enginetest.WaitFor(t, e.events, func(ev *river.Event) bool { return pending[ev.Job.ID] })
			switch ev.Kind {
			case river.EventKindJobCompleted:
				completed++
			case river.EventKindJobSnoozed:
				snoozed++
				if ev.Job.ScheduledAt.Before(time.Now().Add(time.Hour)) && time.Until(nextMidnightUTC()) > 2*time.Hour {
					t.Errorf("job %d snoozed only to %s, not to the budget reset", ev.Job.ID, ev.Job.ScheduledAt)
				}
			default:
				t.Fatalf("job %d: %s (%s) %v", ev.Job.ID, ev.Kind, ev.Job.State, ev.Job.Errors)
			}
			delete(pending, ev.Job.ID)
		}
		rep, err := e.ledger.Report(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range rep {
			if k.Key == "global" {
				t.Logf("%d completed, %d snoozed; global spent %d of %d, reserved %d", completed, snoozed, k.SpentTokens, limit, k.ReservedTokens)
				if k.SpentTokens > limit || k.ReservedTokens != 0 || k.Calls != int64(completed) {
					t.Fatalf("global %+v after %d completed", k, completed)
				}
			}
		}
		if completed == 0 || snoozed == 0 {
			t.Fatalf("%d completed, %d snoozed: the limit should let some through and stop others", completed, snoozed)
		}
		dead, err := e.client.JobList(ctx, river.NewJobListParams().States(rivertype.JobStateDiscarded, rivertype.JobStateCancelled))
		if err != nil || len(dead.Jobs) != 0 {
			t.Fatalf("dead letters: %d, %v", len(dead.Jobs), err)
		}
	})
}

func nextMidnightUTC() time.Time {
	return time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
}

// Probes share the fixed prompt: DeepSeek persists it as a prefix when the
// second probe reveals it, so the third call's record and the budget report
// show prompt-cache hits, and the call costs less than the first.
func TestLaterProbeHitsThePrefixCache(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, nil, 60)
		ctx := context.Background()
		for _, p := range []string{"first", "second", "third"} {
			id := e.insert(t, p)
			if row := enginetest.WaitFinal(t, e.events, id); row.State != rivertype.JobStateCompleted {
				t.Fatalf("probe %s: %s %v", p, row.State, row.Errors)
			}
		}
		calls, err := s.ListLLMCalls(ctx, store.LLMCallFilter{Kind: "llm_probe"})
		if err != nil || len(calls) != 3 {
			t.Fatalf("calls %+v, %v", calls, err)
		}
		first, second := calls[2], calls[0] // newest first
		if first.CacheHitTokens != 0 || second.CacheHitTokens == 0 || second.CostNanoUSD >= first.CostNanoUSD {
			t.Fatalf("first %+v\nsecond %+v", first, second)
		}
		rep, err := e.ledger.Report(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range rep {
			if k.Key == "global" && (k.CacheHitTokens != second.CacheHitTokens || k.CacheHitShare <= 0) {
				t.Fatalf("budget report lacks the cache hits: %+v", k)
			}
		}
	})
}
