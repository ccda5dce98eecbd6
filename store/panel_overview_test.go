package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The panel pages through call records: a filter, a limit and an offset,
// newest first, with no row on two pages.
func TestLLMCallPage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		for i := range 5 {
			kind := "retro_session"
			if i%2 == 1 {
				kind = "consolidate"
			}
			c := store.LLMCall{JobID: int64(i + 1), Kind: kind, Workspace: "/a", Model: "m", Outcome: "ok",
				CreatedAt: t0.Add(time.Duration(i) * time.Minute)}
			if err := s.InsertLLMCall(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		page := func(f store.LLMCallFilter, offset int) []int64 {
			t.Helper()
			f.Offset = offset
			calls, err := s.LLMCallPage(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var jobs []int64
			for _, c := range calls {
				jobs = append(jobs, c.JobID)
			}
			return jobs
		}
		if got := page(store.LLMCallFilter{Limit: 2}, 0); len(got) != 2 || got[0] != 5 || got[1] != 4 {
			t.Fatalf("first page %v; want [5 4]", got)
		}
		if got := page(store.LLMCallFilter{Limit: 2}, 2); len(got) != 2 || got[0] != 3 || got[1] != 2 {
			t.Fatalf("second page %v; want [3 2]", got)
		}
		if got := page(store.LLMCallFilter{Limit: 2}, 4); len(got) != 1 || got[0] != 1 {
			t.Fatalf("last page %v; want [1]", got)
		}
		f := store.LLMCallFilter{Kind: "retro_session", Since: t0.Add(time.Minute), Until: t0.Add(5 * time.Minute), Limit: 10}
		if got := page(f, 0); len(got) != 2 || got[0] != 5 || got[1] != 3 {
			t.Fatalf("filtered %v; want [5 3]", got)
		}
		if _, err := s.LLMCallPage(ctx, store.LLMCallFilter{Offset: -1}); err == nil {
			t.Fatal("a negative offset was accepted")
		}
	})
}
