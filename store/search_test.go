package store_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestSearchMemoriesTermCap: MaxSearchTerms terms run on both databases;
// one more is refused with an error, never a statement the database chokes
// on.
func TestSearchMemoriesTermCap(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		m := store.Memory{Workspace: "/w", Kind: "fact", Text: "w31 here", TextNorm: "w31 here", Importance: 5, Origin: "tool",
			RecordedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), TTLDays: 180}
		if _, err := s.InsertMemory(ctx, s.DB, m); err != nil {
			t.Fatal(err)
		}
		terms := make([]string, store.MaxSearchTerms+1)
		for i := range terms {
			terms[i] = "w" + strconv.Itoa(i)
		}
		hits, err := s.SearchMemories(ctx, s.DB, []string{"/w"}, terms[:store.MaxSearchTerms], 0)
		if err != nil || len(hits) != 1 {
			t.Fatalf("%d terms: %d hits, %v", store.MaxSearchTerms, len(hits), err)
		}
		if _, err := s.SearchMemories(ctx, s.DB, []string{"/w"}, terms, 0); err == nil || !strings.Contains(err.Error(), "at most 32") {
			t.Fatalf("%d terms: %v", len(terms), err)
		}
	})
}
