package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestOverheadReads: the agent's usage events come back typed, by window
// and workspace; mull's calls are summed by workspace, UTC day and kind.
func TestOverheadReads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		day1 := time.Date(2026, 11, 29, 23, 30, 0, 0, time.UTC)
		day2 := day1.Add(time.Hour)
		usage := func(id, ws string, at time.Time, payload string) store.Event {
			return store.Event{ID: id, SessionID: "session-" + ws[1:], Workspace: ws, Type: "usage", Time: at, Payload: []byte(payload), Source: store.SourceImport}
		}
		evs := []store.Event{
			usage("u1", "/a", day1, `{"model":"deepseek-v4-flash","input_tokens":245,"cache_read_tokens":8384,"output_tokens":36,"reasoning_tokens":10,"turn":1,"step":1}`),
			usage("u2", "/a", day2, `{"model":"deepseek-v4-flash","input_tokens":10,"cache_read_tokens":0,"output_tokens":2}`),
			usage("u3", "/b", day2, `{"input_tokens":1,"cache_read_tokens":2,"output_tokens":3}`),
			{ID: "m1", SessionID: "session-a", Workspace: "/a", Type: "user_message", Time: day1, Payload: []byte(`{"text":"hi"}`), Source: store.SourcePush},
		}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			for _, ws := range []string{"/a", "/b"} {
				if _, _, err := s.LockSession(ctx, tx, "session-"+ws[1:], ws, day1); err != nil {
					return err
				}
			}
			_, err := s.InsertEvents(ctx, tx, evs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		all, err := s.AgentUsages(ctx, store.OverheadFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3 || all[0].Model != "deepseek-v4-flash" || all[0].CacheReadTokens != 8384 || *all[0].ReasoningTokens != 10 ||
			all[0].Step != 1 || !all[0].Time.Equal(day1) || all[0].SessionID != "session-a" {
			t.Fatalf("usages %+v", all)
		}
		got, err := s.AgentUsages(ctx, store.OverheadFilter{Workspace: "/a", Since: day2})
		if err != nil || len(got) != 1 || got[0].InputTokens != 10 {
			t.Fatalf("filtered usages %+v, %v", got, err)
		}
		got, err = s.AgentUsages(ctx, store.OverheadFilter{SessionID: "session-b"})
		if err != nil || len(got) != 1 || got[0].Workspace != "/b" {
			t.Fatalf("one session's usages %+v, %v", got, err)
		}
		got, err = s.AgentUsages(ctx, store.OverheadFilter{SessionID: "session-a", Until: day2})
		if err != nil || len(got) != 1 || got[0].Step != 1 {
			t.Fatalf("one session's usages before day2 %+v, %v", got, err)
		}
		// CountAgentUsages counts what AgentUsages lists, filter for filter.
		for _, f := range []store.OverheadFilter{{}, {Workspace: "/a", Since: day2}, {SessionID: "session-b"}, {SessionID: "session-a", Until: day2},
			{Since: day1, Until: day2}, {Since: day2.Add(time.Hour)}} {
			list, err := s.AgentUsages(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := s.CountAgentUsages(ctx, f); err != nil || n != int64(len(list)) {
				t.Fatalf("count %+v: %d, %v; want %d", f, n, err, len(list))
			}
		}

		for _, c := range []store.LLMCall{
			{Kind: "retro_session", Workspace: "/a", Model: "m", PromptTokens: 1000, CacheHitTokens: 800, CacheMissTokens: 200, CompletionTokens: 100, CostNanoUSD: 500, Outcome: "ok", CreatedAt: day1},
			{Kind: "retro_session", Workspace: "/a", Model: "m", PromptTokens: 500, CacheHitTokens: 0, CacheMissTokens: 500, CompletionTokens: 50, CostNanoUSD: 300, Outcome: "ok", CreatedAt: day1.Add(time.Minute)},
			{Kind: "consolidate", Workspace: "/a", Model: "m", PromptTokens: 10, CompletionTokens: 1, CostNanoUSD: 7, Outcome: "ok", CreatedAt: day2},
			{Kind: "retro_error", Workspace: "/b", Model: "m", Outcome: store.LLMCallRunning, CreatedAt: day2},
		} {
			if err := s.InsertLLMCall(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		spend, err := s.SumLearningSpend(ctx, store.OverheadFilter{})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.LearningSpend{
			{Workspace: "/a", Day: "2026-11-29", Kind: "retro_session", Calls: 2, PromptTokens: 1500, CacheHitTokens: 800, CompletionTokens: 150, CostNanoUSD: 800},
			{Workspace: "/a", Day: "2026-11-30", Kind: "consolidate", Calls: 1, PromptTokens: 10, CompletionTokens: 1, CostNanoUSD: 7},
			{Workspace: "/b", Day: "2026-11-30", Kind: "retro_error", Calls: 1},
		}
		if len(spend) != len(want) {
			t.Fatalf("spend %+v", spend)
		}
		for i := range want {
			if spend[i] != want[i] {
				t.Errorf("row %d: %+v, want %+v", i, spend[i], want[i])
			}
		}
		spend, err = s.SumLearningSpend(ctx, store.OverheadFilter{Workspace: "/a", Until: day2})
		if err != nil || len(spend) != 1 || spend[0].Kind != "retro_session" {
			t.Fatalf("filtered spend %+v, %v", spend, err)
		}
	})
}
