package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestLLMCallStartFinishLost walks call records through their two writes
// and the sweep: started running, finished in place, inserted whole when the
// start is missing, and marked lost only when stale.
func TestLLMCallStartFinishLost(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 123456000, time.UTC)
		start := func(job int64, at time.Time) store.LLMCall {
			t.Helper()
			c := store.LLMCall{JobID: job, Kind: "retro_session", Workspace: "/a", Model: "deepseek-v4-flash", CreatedAt: at}
			if err := s.StartLLMCall(ctx, &c); err != nil {
				t.Fatal(err)
			}
			if c.ID == "" || c.Outcome != store.LLMCallRunning {
				t.Fatalf("started %+v", c)
			}
			return c
		}
		done, stale := start(1, t0), start(2, t0.Add(time.Second))
		start(3, t0.Add(10*time.Minute))

		calls := listCalls(t, s, store.LLMCallFilter{JobID: 1})
		if len(calls) != 1 || calls[0].ID != done.ID || calls[0].Outcome != store.LLMCallRunning ||
			calls[0].PromptTokens != 0 || !calls[0].CreatedAt.Equal(t0) {
			t.Fatalf("running call %+v", calls)
		}
		done.Outcome, done.PromptTokens, done.CompletionTokens, done.CostNanoUSD, done.LatencyMS = "ok", 1000, 200, 350000, 1500
		if err := s.FinishLLMCall(ctx, done); err != nil {
			t.Fatal(err)
		}
		calls = listCalls(t, s, store.LLMCallFilter{JobID: 1})
		if len(calls) != 1 || calls[0].ID != done.ID || calls[0].Outcome != "ok" || calls[0].PromptTokens != 1000 ||
			calls[0].CostNanoUSD != 350000 || calls[0].LatencyMS != 1500 || !calls[0].CreatedAt.Equal(t0) {
			t.Fatalf("finished call %+v", calls)
		}

		// A start that was never written: the finish inserts the record.
		for _, id := range []string{"call_unstarted", ""} {
			c := store.LLMCall{ID: id, JobID: 4, Kind: "retro_session", Model: "m", Outcome: "retryable",
				ErrorReason: "http_503", CreatedAt: t0}
			if err := s.FinishLLMCall(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if calls := listCalls(t, s, store.LLMCallFilter{JobID: 4}); len(calls) != 2 || calls[0].Outcome != "retryable" || calls[1].Outcome != "retryable" {
			t.Fatalf("finished without a start: %+v", calls)
		}

		// Only calls still running and started before the cutoff are lost.
		before := t0.Add(5 * time.Minute)
		if n, err := s.MarkLostLLMCalls(ctx, before); err != nil || n != 1 {
			t.Fatalf("MarkLostLLMCalls = %d, %v; want 1", n, err)
		}
		if n, err := s.MarkLostLLMCalls(ctx, before); err != nil || n != 0 {
			t.Fatalf("MarkLostLLMCalls again = %d, %v; want 0", n, err)
		}
		lost := listCalls(t, s, store.LLMCallFilter{JobID: 2})
		if len(lost) != 1 || lost[0].ID != stale.ID || lost[0].Outcome != store.LLMCallLost ||
			lost[0].ErrorReason != store.LostLLMCallReason || lost[0].Error != store.LostLLMCallError {
			t.Fatalf("stale call %+v; want lost", lost)
		}
		if calls := listCalls(t, s, store.LLMCallFilter{JobID: 3}); len(calls) != 1 || calls[0].Outcome != store.LLMCallRunning {
			t.Fatalf("fresh call %+v; want still running", calls)
		}
		if calls := listCalls(t, s, store.LLMCallFilter{JobID: 1}); calls[0].Outcome != "ok" {
			t.Fatalf("finished call %+v; want ok", calls)
		}

		// Usage: every record is a call; lost and errors fail, running does not.
		rows, err := s.SumLLMCalls(ctx, "kind", store.LLMCallFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Calls != 5 || rows[0].Failed != 3 || rows[0].PromptTokens != 1000 || rows[0].CostNanoUSD != 350000 {
			t.Fatalf("usage %+v; want 5 calls, 3 failed (lost, 2 retryable)", rows)
		}
		counts, err := s.CountLLMCalls(ctx, t0.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, c := range counts {
			got[c.Outcome] += c.Calls
		}
		if len(got) != 4 || got["ok"] != 1 || got[store.LLMCallRunning] != 1 || got[store.LLMCallLost] != 1 || got["retryable"] != 2 {
			t.Fatalf("counts by outcome %v", got)
		}

		// A lost call that returns after all still records the truth.
		stale.Outcome, stale.PromptTokens = "ok", 10
		if err := s.FinishLLMCall(ctx, stale); err != nil {
			t.Fatal(err)
		}
		if calls := listCalls(t, s, store.LLMCallFilter{JobID: 2}); len(calls) != 1 || calls[0].Outcome != "ok" || calls[0].ErrorReason != "" || calls[0].PromptTokens != 10 {
			t.Fatalf("late call %+v; want ok", calls)
		}
	})
}

func listCalls(t *testing.T, s *store.Store, f store.LLMCallFilter) []store.LLMCall {
	t.Helper()
	calls, err := s.ListLLMCalls(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return calls
}
