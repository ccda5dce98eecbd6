package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestHandoffAndRetroRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 123456000, time.UTC)
		if _, ok, err := s.GetHandoff(ctx, s.DB, "/w"); ok || err != nil {
			t.Fatalf("handoff before any: %v, %v", ok, err)
		}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if err := s.PutHandoff(ctx, tx, store.Handoff{Workspace: "/w", Text: "a\nb\nc", SessionID: "s1", JobID: 1, RecordedAt: t0}); err != nil {
				return err
			}
			return s.PutHandoff(ctx, tx, store.Handoff{Workspace: "/w", Text: "d\ne\nf", SessionID: "s2", JobID: 2, RecordedAt: t0.Add(time.Hour)})
		})
		if err != nil {
			t.Fatal(err)
		}
		h, ok, err := s.GetHandoff(ctx, s.DB, "/w")
		if !ok || err != nil || h.Text != "d\ne\nf" || h.SessionID != "s2" || h.JobID != 2 || !h.RecordedAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("handoff %+v, %v, %v", h, ok, err)
		}
		var first, second bool
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			r := store.RetroRun{JobID: 7, SessionID: "s2", Workspace: "/w", AppliedAt: t0, Counts: `{"added":1}`}
			if first, err = s.InsertRetroRun(ctx, tx, r); err != nil {
				return err
			}
			second, err = s.InsertRetroRun(ctx, tx, r)
			return err
		})
		if err != nil || !first || second {
			t.Fatalf("retro run marks: %v %v %v", first, second, err)
		}
		r, ok, err := s.GetRetroRun(ctx, s.DB, 7)
		if !ok || err != nil || r.Counts != `{"added":1}` || r.Workspace != "/w" || !r.AppliedAt.Equal(t0) {
			t.Fatalf("retro run %+v, %v, %v", r, ok, err)
		}
		if _, ok, err := s.GetRetroRun(ctx, s.DB, 8); ok || err != nil {
			t.Fatalf("unknown retro run: %v, %v", ok, err)
		}
	})
}

func TestPlaybooksAndProposals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		var added []bool
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			for i, steps := range [][]string{{"a", "b"}, {"c"}} {
				if err := s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/w", Slug: "fix-build", Steps: steps,
					SessionID: "s", JobID: int64(i + 1), UpdatedAt: t0}); err != nil {
					return err
				}
			}
			for i, id := range []string{"retro-1", "retro-2"} {
				ok, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: id, Workspace: "/w", Summary: "use pnpm",
					SessionID: "s", JobID: int64(i + 1), CreatedAt: t0})
				if err != nil {
					return err
				}
				added = append(added, ok)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		pbs, err := s.ListPlaybooks(ctx, s.DB, "/w")
		if err != nil || len(pbs) != 1 || len(pbs[0].Steps) != 1 || pbs[0].Steps[0] != "c" || pbs[0].JobID != 2 {
			t.Fatalf("playbooks %+v, %v", pbs, err)
		}
		ps, err := s.ListProposals(ctx, s.DB, "/w")
		if err != nil || len(ps) != 1 || ps[0].ID != "retro-1" || ps[0].Status != store.ProposalPending || !added[0] || added[1] {
			t.Fatalf("proposals %+v (added %v), %v", ps, added, err)
		}
	})
}
