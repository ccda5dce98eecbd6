package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The review gate survives a restart: what PutHarnessGate wrote, a fresh
// read gives back field for field; a session without one reads as zero.
func TestHarnessGateRoundTrip(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		at := time.Date(2026, 12, 1, 10, 0, 0, 123000, time.UTC)
		want := harness.Gate{Turns: 24, Pending: true, PendingReason: harness.Compact, Enqueued: true, LastAttemptAt: at, Closed: true}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			g, err := s.HarnessGate(ctx, tx, "s1")
			if err != nil {
				return err
			}
			if g != (harness.Gate{}) {
				t.Errorf("a session without a gate read %+v, want the zero gate", g)
			}
			if err := s.PutHarnessGate(ctx, tx, "s1", "/w", harness.Gate{Turns: 3}); err != nil {
				return err
			}
			return s.PutHarnessGate(ctx, tx, "s1", "/w", want)
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			g, err := s.HarnessGate(ctx, tx, "s1")
			if g != want {
				t.Errorf("gate = %+v, want %+v", g, want)
			}
			if err := s.PutHarnessGate(ctx, tx, "s1", "/w", harness.Gate{Turns: 1}); err != nil {
				return err
			}
			g, _ = s.HarnessGate(ctx, tx, "s1")
			if !g.LastAttemptAt.IsZero() || g.Turns != 1 || g.Pending {
				t.Errorf("replaced gate = %+v, want only 1 turn", g)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
