package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Each of the digest's other sections marks a change after its stamp, and
// only for its own workspace; a stamp equal to since is not after it.
func TestDigestSectionsChangedSince(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 123456000, time.UTC)
		changed := func(ws string, since time.Time) bool {
			t.Helper()
			ok, err := s.DigestSectionsChangedSince(ctx, s.DB, []string{ws}, since)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		write := func(f func(tx *sql.Tx) error) {
			t.Helper()
			if err := s.InTx(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		if changed("/h", time.Time{}) {
			t.Fatal("changed with no rows")
		}
		if ok, err := s.DigestSectionsChangedSince(ctx, s.DB, nil, time.Time{}); ok || err != nil {
			t.Fatalf("no workspaces: %v, %v", ok, err)
		}

		write(func(tx *sql.Tx) error {
			return s.PutHandoff(ctx, tx, store.Handoff{Workspace: "/h", Text: "next", SessionID: "s", JobID: 1, RecordedAt: t0})
		})
		write(func(tx *sql.Tx) error {
			return s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/b", Slug: "release", Steps: []string{"tag"}, SessionID: "s", JobID: 2, UpdatedAt: t0})
		})
		write(func(tx *sql.Tx) error {
			_, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: "retro-3", Workspace: "/p", Summary: "cache", SessionID: "s", JobID: 3, CreatedAt: t0})
			return err
		})
		for _, ws := range []string{"/h", "/b", "/p"} {
			if !changed(ws, t0.Add(-time.Microsecond)) || changed(ws, t0) {
				t.Errorf("%s: want changed just before %s, not at it", ws, t0)
			}
		}
		if changed("/other", time.Time{}) {
			t.Error("another workspace changed")
		}
		if ok, err := s.DigestSectionsChangedSince(ctx, s.DB, []string{"/other", "/h"}, t0.Add(-time.Second)); !ok || err != nil {
			t.Errorf("either of two workspaces: %v, %v", ok, err)
		}

		// Deciding stamps decided_at; a use stamps nothing the mark reads.
		write(func(tx *sql.Tx) error {
			_, err := s.DecideProposal(ctx, tx, "retro-3", store.ProposalAccepted, "", store.DecidedByCLI, t0.Add(time.Hour))
			return err
		})
		if !changed("/p", t0.Add(time.Minute)) || changed("/p", t0.Add(time.Hour)) {
			t.Error("/p: a decision is not a change")
		}
		write(func(tx *sql.Tx) error {
			_, err := s.UsePlaybook(ctx, tx, store.PlaybookUse{Workspace: "/b", Slug: "release", Success: true, At: t0.Add(time.Hour)})
			return err
		})
		if changed("/b", t0) {
			t.Error("/b: a use is a change")
		}
	})
}
