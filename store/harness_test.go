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
		want := harness.Gate{Turns: 24, Pending: true, PendingReason: harness.Compact, Enqueued: true, EnqueuedAt: at.Add(-time.Minute), LastAttemptAt: at, Closed: true}
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

// A refinement's applied and rejected counts are columns written at
// insert: HarnessStats sums them and RecentHarnessRefinements reads them
// (no applied edits); injection counts are summed per entry in SQL.
func TestHarnessCountsAsColumns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		for i, r := range []store.HarnessRefinement{
			{Refinement: harness.Refinement{ID: "r1", Summary: "one", CommittedAt: at,
				Edits: []harness.AppliedEdit{{Applied: true}, {Applied: true}, {Error: "x"}}}, ScopeKey: "global", Source: "admin"},
			{Refinement: harness.Refinement{ID: "r2", Summary: "two", CommittedAt: at.Add(time.Minute),
				Edits: []harness.AppliedEdit{{Error: "y"}}}, ScopeKey: "session:s1", Source: "job"},
			{Refinement: harness.Refinement{ID: "r3", Summary: "three", CommittedAt: at.Add(2 * time.Minute)}, ScopeKey: "session:s2", Source: "job"},
		} {
			if err := s.InTx(ctx, func(tx *sql.Tx) error { return s.InsertHarnessRefinement(ctx, tx, r) }); err != nil {
				t.Fatalf("insert %d: %v", i, err)
			}
		}
		st, err := s.HarnessStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		edits := map[string]int64{}
		for _, c := range st.Edits {
			edits[c.A] = c.N
		}
		if edits["applied"] != 2 || edits["rejected"] != 2 {
			t.Fatalf("edits %+v, want 2 applied, 2 rejected", st.Edits)
		}
		lines, err := s.RecentHarnessRefinements(ctx, s.DB, []string{"global", "session:s1"}, 5)
		want := []store.HarnessRefinementLine{{ID: "r2", ScopeKey: "session:s1", Summary: "two", Rejected: 1},
			{ID: "r1", ScopeKey: "global", Summary: "one", Applied: 2, Rejected: 1}}
		if err != nil || len(lines) != 2 || lines[0] != want[0] || lines[1] != want[1] {
			t.Fatalf("recent %+v, %v; want %+v", lines, err, want)
		}
		if lines, err := s.RecentHarnessRefinements(ctx, s.DB, nil, 1); err != nil || len(lines) != 1 || lines[0].ID != "r3" {
			t.Fatalf("recent of all, limit 1: %+v, %v", lines, err)
		}

		for i, in := range []store.HarnessInjection{
			{ScopeKey: "global", Kind: harness.KindMemory, ID: "m", SessionID: "s1", LastInjectedAt: at},
			{ScopeKey: "global", Kind: harness.KindMemory, ID: "m", SessionID: "s1", LastInjectedAt: at.Add(time.Minute)},
			{ScopeKey: "global", Kind: harness.KindMemory, ID: "m", SessionID: "s2", LastInjectedAt: at.Add(90 * time.Second)},
			{ScopeKey: "global", Kind: harness.KindPrompt, ID: "p", SessionID: "s2", LastInjectedAt: at},
			{ScopeKey: "session:s1", Kind: harness.KindMemory, ID: "m", SessionID: "s1", LastInjectedAt: at},
		} {
			if err := s.AddHarnessInjection(ctx, s.DB, in); err != nil {
				t.Fatalf("injection %d: %v", i, err)
			}
		}
		tot, err := s.HarnessInjectionTotals(ctx, s.DB, []string{"global"}, "", "")
		if err != nil || len(tot) != 2 || tot[0].ID != "m" || tot[0].Count != 3 || !tot[0].LastInjectedAt.Equal(at.Add(90*time.Second)) ||
			tot[1].ID != "p" || tot[1].Count != 1 {
			t.Fatalf("totals %+v, %v", tot, err)
		}
		tot, err = s.HarnessInjectionTotals(ctx, s.DB, nil, harness.KindMemory, "m")
		if err != nil || len(tot) != 2 || tot[0].ScopeKey != "global" || tot[1].ScopeKey != "session:s1" || tot[1].Count != 1 {
			t.Fatalf("totals of memory/m %+v, %v", tot, err)
		}
	})
}
