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

// Migration 023 keeps one pending proposal per workspace for retros only:
// harness proposals (held global refinements) are many, with a payload.
func TestProposalKinds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		add := func(p store.Proposal) bool {
			var ok bool
			if err := s.InTx(ctx, func(tx *sql.Tx) (err error) { ok, err = s.AddPendingProposal(ctx, tx, p); return err }); err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !add(store.Proposal{ID: "retro-1", Workspace: "/w", Summary: "a", SessionID: "s", JobID: 1, CreatedAt: at}) ||
			add(store.Proposal{ID: "retro-2", Workspace: "/w", Summary: "b", SessionID: "s", JobID: 2, CreatedAt: at}) {
			t.Fatal("the one-pending rule of retro proposals does not hold")
		}
		for _, id := range []string{"harness-a", "harness-b"} {
			if !add(store.Proposal{ID: id, Summary: "h", CreatedAt: at, Kind: store.ProposalHarness, Payload: `{"id":"` + id + `"}`}) {
				t.Fatalf("harness proposal %s refused", id)
			}
		}
		if add(store.Proposal{ID: "harness-a", Summary: "again", CreatedAt: at, Kind: store.ProposalHarness, Payload: `{}`}) {
			t.Error("a harness proposal id stored twice")
		}
		p, err := s.GetProposal(ctx, s.DB, "harness-b")
		if err != nil || p.Kind != store.ProposalHarness || p.Payload != `{"id": "harness-b"}` && p.Payload != `{"id":"harness-b"}` {
			t.Errorf("harness proposal = %+v %v", p, err)
		}
		if r, _ := s.GetProposal(ctx, s.DB, "retro-1"); r.Kind != store.ProposalRetro || r.Payload != "" {
			t.Errorf("retro proposal = %+v", r)
		}
	})
}
