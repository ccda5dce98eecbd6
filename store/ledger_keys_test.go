package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A scope keeps its newest observations: TrimObservations drops the oldest
// beyond max, and leaves other scopes alone.
func TestLedgerTrimObservations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		fixedClock(s, &now)
		for i := range 5 {
			now = now.Add(time.Second)
			for _, scope := range []string{"/w", "/other"} {
				if _, _, err := s.LedgerWrite(ctx, op("fs"), func(lt *store.LedgerTx) (any, error) {
					return nil, lt.UpsertObservations(scope, []store.LedgerObservation{{Key: fmt.Sprintf("k%d", i), Observed: ledger.Present, Version: "1"}})
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		var gone int
		if _, _, err := s.LedgerWrite(ctx, op("trim"), func(lt *store.LedgerTx) (any, error) {
			var err error
			gone, err = lt.TrimObservations("/w", 3)
			return nil, err
		}); err != nil || gone != 2 {
			t.Fatalf("trim = %d, %v; want 2", gone, err)
		}
		keys := []string{"k0", "k1", "k2", "k3", "k4"}
		w, _ := s.LedgerObservations(ctx, "/w", keys)
		o, _ := s.LedgerObservations(ctx, "/other", keys)
		if _, ok := w["k1"]; len(w) != 3 || ok || len(o) != 5 {
			t.Fatalf("after trim /w = %v, /other = %d", w, len(o))
		}
	})
}

// ledger_fact_keys names the facts whose preconditions name a key, in the
// scope, and follows the fact's evidence: a new version without the
// precondition drops the key.
func TestLedgerFactKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		with := cmdInput("/w", "make")
		with.Evidence = append(with.Evidence, ledger.Witness{Role: ledger.Precondition, Kind: ledger.WitnessFileState, Path: "/w/go.mod", Observed: ledger.Present, Version: "1"})
		f := record(t, s, "c1", with).Fact
		record(t, s, "c2", func() store.FactInput { in := cmdInput("/x", "make"); in.Evidence = with.Evidence; return in }())
		naming := func(scope string) []int64 {
			var ids []int64
			if _, _, err := s.LedgerWrite(ctx, op("q"), func(lt *store.LedgerTx) (any, error) {
				var err error
				ids, err = lt.FactsNaming(scope, []string{"/w/go.mod", "/w/other"})
				return nil, err
			}); err != nil {
				t.Fatal(err)
			}
			return ids
		}
		if ids := naming("/w"); !slices.Equal(ids, []int64{f.ID}) {
			t.Fatalf("facts naming go.mod in /w = %v, want [%d]", ids, f.ID)
		}
		record(t, s, "c3", cmdInput("/w", "make")) // a new version, cooldown only
		if ids := naming("/w"); len(ids) != 0 {
			t.Fatalf("after a version without the precondition = %v, want none", ids)
		}
	})
}
