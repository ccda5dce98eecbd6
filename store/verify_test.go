package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A verification records its actor beside its time; a blank or unknown
// actor is refused and changes nothing; a row from before mull recorded
// verifiers reads ”.
func TestVerifyMemoryRecordsWho(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		id, err := s.InsertMemory(ctx, s.DB, store.Memory{Workspace: "/w", Kind: "fact", Text: "a", TextNorm: "a",
			Origin: "retro", RecordedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := s.GetMemory(ctx, s.DB, id); m.VerifiedBy != "" || !m.VerifiedAt.IsZero() {
			t.Fatalf("never verified: %q %v", m.VerifiedBy, m.VerifiedAt)
		}
		for _, bad := range []string{"", "  ", "admin", "someone"} {
			ok, err := s.VerifyMemory(ctx, s.DB, id, t0.Add(time.Hour), "user", bad)
			if ok || err == nil || !strings.Contains(err.Error(), "verify memory") || !strings.Contains(err.Error(), store.ActorAgent) {
				t.Fatalf("verifier %q: %v, %v", bad, ok, err)
			}
		}
		if m, _ := s.GetMemory(ctx, s.DB, id); m.VerifiedBy != "" || !m.VerifiedAt.IsZero() || m.Src != "" {
			t.Fatalf("a refused verifier changed the memory: %+v", m)
		}
		for i, by := range store.Actors() {
			at := t0.Add(time.Duration(i+1) * time.Hour)
			if ok, err := s.VerifyMemory(ctx, s.DB, id, at, "user", by); !ok || err != nil {
				t.Fatalf("verify by %q: %v, %v", by, ok, err)
			}
			if m, _ := s.GetMemory(ctx, s.DB, id); m.VerifiedBy != by || !m.VerifiedAt.Equal(at) || m.Src != "user" {
				t.Fatalf("verified by %q: got %q at %v", by, m.VerifiedBy, m.VerifiedAt)
			}
		}
		// A row written as before the column existed (it names no
		// verifier) reads the column's default.
		var old int64
		if err := s.DB.QueryRowContext(ctx, `insert into memories (workspace, kind, text, text_norm, origin, recorded_at, verified_at)
			values ('/w', 'fact', 'old', 'old', 'retro', $1, $2) returning id`, t0, t0.Add(time.Hour)).Scan(&old); err != nil {
			t.Fatal(err)
		}
		if m, _ := s.GetMemory(ctx, s.DB, old); m.VerifiedBy != "" || !m.VerifiedAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("old row: %q %v", m.VerifiedBy, m.VerifiedAt)
		}
	})
}

// A copy (a move, a merge) carries its verifier: an actor, the merge's
// marker or ” (not recorded); anything else, or a verifier without a
// verified time, is refused.
func TestInsertMemoryVerifier(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		row := func(text string, at time.Time, by string) store.Memory {
			return store.Memory{Workspace: "/w", Kind: "fact", Text: text, TextNorm: text, Origin: "sleep", RecordedAt: t0,
				VerifiedAt: at, VerifiedBy: by}
		}
		for _, by := range []string{"", store.ActorCLI, store.VerifiedByMerge} {
			id, err := s.InsertMemory(ctx, s.DB, row("ok "+by, t0, by))
			if err != nil {
				t.Fatalf("insert verified by %q: %v", by, err)
			}
			if m, _ := s.GetMemory(ctx, s.DB, id); m.VerifiedBy != by || !m.VerifiedAt.Equal(t0) {
				t.Fatalf("stored verifier %q, want %q", m.VerifiedBy, by)
			}
		}
		if _, err := s.InsertMemory(ctx, s.DB, row("b", t0, "the boss")); err == nil || !strings.Contains(err.Error(), `"the boss" is not an actor`) {
			t.Fatalf("unknown verifier: %v", err)
		}
		if _, err := s.InsertMemory(ctx, s.DB, row("c", time.Time{}, store.ActorAPI)); err == nil || !strings.Contains(err.Error(), "never verified") {
			t.Fatalf("verifier without a time: %v", err)
		}
	})
}
