package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
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

func TestUsePlaybook(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		use := func(slug string, success bool, at time.Time) (p store.Playbook, err error) {
			err = s.InTx(ctx, func(tx *sql.Tx) error {
				p, err = s.UsePlaybook(ctx, tx, "/w", slug, success, at)
				return err
			})
			return p, err
		}
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			return s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/w", Slug: "release", Steps: []string{"tag"}, UpdatedAt: t0})
		}); err != nil {
			t.Fatal(err)
		}
		p, err := use("release", false, t0.Add(time.Hour))
		if err != nil || p.Uses != 1 || p.Fails != 1 || p.Successes != 0 || !p.VerifiedAt.IsZero() {
			t.Fatalf("a failed use: %+v, %v", p, err)
		}
		p, err = use("release", true, t0.Add(2*time.Hour))
		if err != nil || p.Uses != 2 || p.Fails != 1 || p.Successes != 1 || !p.VerifiedAt.Equal(t0.Add(2*time.Hour)) {
			t.Fatalf("a successful use: %+v, %v", p, err)
		}
		if p, err = use("release", false, t0.Add(3*time.Hour)); err != nil || !p.VerifiedAt.Equal(t0.Add(2*time.Hour)) || p.Uses != 3 {
			t.Fatalf("a failure moved verified_at: %+v, %v", p, err)
		}
		// A newer retro replaces the steps; the record stays.
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			return s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/w", Slug: "release", Steps: []string{"tag", "push"}, UpdatedAt: t0.Add(4 * time.Hour)})
		}); err != nil {
			t.Fatal(err)
		}
		pbs, err := s.ListPlaybooks(ctx, s.DB, "/w")
		if err != nil || len(pbs) != 1 || pbs[0].Uses != 3 || pbs[0].Successes != 1 || !pbs[0].VerifiedAt.Equal(t0.Add(2*time.Hour)) || len(pbs[0].Steps) != 2 {
			t.Fatalf("list after use: %+v, %v", pbs, err)
		}
		if _, err := use("nope", true, t0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown slug: %v", err)
		}
	})
}

func TestDecideProposal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		decide := func(id, status, note string, at time.Time) (p store.Proposal, err error) {
			err = s.InTx(ctx, func(tx *sql.Tx) error {
				p, err = s.DecideProposal(ctx, tx, id, status, note, at)
				return err
			})
			return p, err
		}
		add := func(id, ws string, at time.Time) {
			t.Helper()
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				ok, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: id, Workspace: ws, Summary: "summary of " + id, CreatedAt: at})
				if err == nil && !ok {
					err = fmt.Errorf("proposal %s not added", id)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		add("retro-1", "/w", t0)
		add("retro-2", "/v", t0.Add(time.Minute))
		if p, err := s.GetProposal(ctx, s.DB, "retro-1"); err != nil || p.Status != store.ProposalPending || !p.DecidedAt.IsZero() || p.Summary != "summary of retro-1" {
			t.Fatalf("get: %+v, %v", p, err)
		}
		if _, err := s.GetProposal(ctx, s.DB, "retro-9"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("get unknown: %v", err)
		}
		p, err := decide("retro-1", store.ProposalRejected, "we use bazel", t0.Add(time.Hour))
		if err != nil || p.Status != store.ProposalRejected || p.Note != "we use bazel" || !p.DecidedAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("reject: %+v, %v", p, err)
		}
		_, err = decide("retro-1", store.ProposalAccepted, "", t0.Add(2*time.Hour))
		if !errors.Is(err, store.ErrNotPending) || !strings.Contains(err.Error(), "already rejected") {
			t.Fatalf("decide twice: %v", err)
		}
		if p, _ := s.GetProposal(ctx, s.DB, "retro-1"); p.Status != store.ProposalRejected || p.Note != "we use bazel" {
			t.Fatalf("a second decision changed %+v", p)
		}
		if _, err := decide("retro-9", store.ProposalAccepted, "", t0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("decide unknown: %v", err)
		}
		if _, err := decide("retro-2", store.ProposalPending, "", t0); err == nil || errors.Is(err, store.ErrNotPending) {
			t.Fatalf("decide to pending: %v", err)
		}
		// A decided proposal frees the workspace for the next one.
		add("retro-3", "/w", t0.Add(2*time.Minute))

		ids := func(ps []store.Proposal, err error) string {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, p := range ps {
				out = append(out, p.ID)
			}
			return strings.Join(out, ",")
		}
		for _, c := range []struct {
			ws       string
			statuses []string
			want     string
		}{
			{"", nil, "retro-1,retro-2,retro-3"},
			{"/w", nil, "retro-1,retro-3"},
			{"/w", []string{store.ProposalPending}, "retro-3"},
			{"", []string{store.ProposalPending}, "retro-2,retro-3"},
			{"", []string{store.ProposalRejected, store.ProposalAccepted}, "retro-1"},
			{"/v", []string{store.ProposalRejected}, ""},
		} {
			if got := ids(s.ListProposals(ctx, s.DB, c.ws, c.statuses...)); got != c.want {
				t.Errorf("list %q %v: %s, want %s", c.ws, c.statuses, got, c.want)
			}
		}
	})
}
