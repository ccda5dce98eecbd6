package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The panel's proposal reads: a page (pending first, then newest), the
// counts by status and the workspaces, filtered by workspace and status.
func TestPanelProposalReads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		add := func(id, ws string, at time.Time) {
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				_, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: id, Workspace: ws, Summary: id, CreatedAt: at})
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		decide := func(id string) {
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				_, err := s.DecideProposal(ctx, tx, id, store.ProposalAccepted, "", store.DecidedByPanel, t0.Add(time.Hour))
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		add("a1", "/a", t0)
		decide("a1")
		add("a2", "/a", t0.Add(2*time.Minute))
		decide("a2")
		add("a3", "/a", t0.Add(time.Minute)) // pending, older than a2
		add("b1", "/b", t0.Add(3*time.Minute))
		ids := func(f store.ProposalPage) string {
			ps, err := s.ProposalsPage(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			out := ""
			for _, p := range ps {
				out += p.ID + " "
			}
			return out
		}
		for _, c := range []struct {
			f    store.ProposalPage
			want string
		}{
			{store.ProposalPage{Limit: 10}, "b1 a3 a2 a1 "},
			{store.ProposalPage{Limit: 2, Offset: 2}, "a2 a1 "},
			{store.ProposalPage{Workspace: "/a", Limit: 10}, "a3 a2 a1 "},
			{store.ProposalPage{Workspace: "/a", Status: store.ProposalAccepted, Limit: 10}, "a2 a1 "},
			{store.ProposalPage{Workspace: "/c", Limit: 10}, ""},
		} {
			if got := ids(c.f); got != c.want {
				t.Errorf("%+v: %q, want %q", c.f, got, c.want)
			}
		}
		counts, err := s.ProposalStatusCounts(ctx, "/a")
		if err != nil || counts[store.ProposalAccepted] != 2 || counts[store.ProposalPending] != 1 || len(counts) != 2 {
			t.Fatalf("counts of /a: %v, %v", counts, err)
		}
		if all, err := s.ProposalStatusCounts(ctx, ""); err != nil || all[store.ProposalPending] != 2 {
			t.Fatalf("counts: %v, %v", all, err)
		}
		if ws, err := s.ProposalWorkspaces(ctx, 10); err != nil || fmt.Sprint(ws) != "[/a /b]" {
			t.Fatalf("workspaces: %v, %v", ws, err)
		}
	})
}

// PlaybookWorkspaces sums each workspace's playbooks and counts the ones
// unverified since the cutoff (the last success, else the writing).
func TestPanelPlaybookWorkspaces(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		put := func(ws, slug string, at time.Time, uses ...bool) {
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				if err := s.PutPlaybook(ctx, tx, store.Playbook{Workspace: ws, Slug: slug, Steps: []string{"x"}, UpdatedAt: at}); err != nil {
					return err
				}
				for _, ok := range uses {
					if _, err := s.UsePlaybook(ctx, tx, store.PlaybookUse{Workspace: ws, Slug: slug, Success: ok, At: t0.Add(20 * 24 * time.Hour)}); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		put("/a", "old", t0)                      // written before the cutoff, never verified: stale
		put("/a", "verified", t0, true, false)    // verified after it: fresh
		put("/a", "new", t0.Add(25*24*time.Hour)) // written after it: fresh
		put("/b", "x", t0, false)
		cutoff := t0.Add(10 * 24 * time.Hour)
		got, err := s.PlaybookWorkspaces(ctx, cutoff, 10, 0)
		if err != nil || len(got) != 2 {
			t.Fatalf("workspaces: %+v, %v", got, err)
		}
		a := got[0]
		if a.Workspace != "/a" || a.Playbooks != 3 || a.Stale != 1 || a.Uses != 2 || a.Successes != 1 || a.Fails != 1 ||
			!a.UpdatedAt.Equal(t0.Add(25*24*time.Hour)) {
			t.Fatalf("/a: %+v", a)
		}
		if b := got[1]; b.Workspace != "/b" || b.Stale != 1 || b.Fails != 1 {
			t.Fatalf("/b: %+v", b)
		}
		if page, err := s.PlaybookWorkspaces(ctx, cutoff, 1, 1); err != nil || len(page) != 1 || page[0].Workspace != "/b" {
			t.Fatalf("second page: %+v, %v", page, err)
		}
	})
}

// The panel's ledger reads: a page of facts by scope, status, currency
// and counter; a fact's events, newest first; the scopes.
func TestPanelLedgerReads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		fixedClock(s, &at)
		f1 := record(t, s, "c1", cmdInput("/w", "make a")).Fact
		at = at.Add(time.Minute)
		f2 := record(t, s, "c2", cmdInput("/w", "make b")).Fact
		at = at.Add(time.Minute)
		f3 := record(t, s, "c3", cmdInput("/v", "make c")).Fact
		at = at.Add(time.Minute)
		if _, _, err := s.LedgerWrite(ctx, op("c4"), func(lt *store.LedgerTx) (any, error) {
			return lt.Deny(f2.ID, f2.Revision)
		}); err != nil {
			t.Fatal(err)
		}
		ids := func(f store.LedgerPage) string {
			facts, err := s.LedgerFactsPage(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			out := ""
			for _, x := range facts {
				out += fmt.Sprint(x.ID) + " "
			}
			return out
		}
		id := func(fs ...ledger.Fact) string {
			out := ""
			for _, f := range fs {
				out += fmt.Sprint(f.ID) + " "
			}
			return out
		}
		for _, c := range []struct {
			f    store.LedgerPage
			want string
		}{
			{store.LedgerPage{Limit: 10}, id(f3, f2, f1)},
			{store.LedgerPage{Limit: 1, Offset: 1}, id(f2)},
			{store.LedgerPage{Scope: "/w", Limit: 10}, id(f2, f1)},
			{store.LedgerPage{Hit: store.LedgerOpDeny, Limit: 10}, id(f2)},
			{store.LedgerPage{Hit: "any", Scope: "/v", Limit: 10}, ""},
			{store.LedgerPage{Statuses: []ledger.Status{ledger.Stale}, CurrentOnly: true, Limit: 10}, ""},
			{store.LedgerPage{Statuses: []ledger.Status{ledger.Active}, CurrentOnly: true, Scope: "/v", Limit: 10}, id(f3)},
		} {
			if got := ids(c.f); got != c.want {
				t.Errorf("%+v: %q, want %q", c.f, got, c.want)
			}
		}
		if _, err := s.LedgerFactsPage(ctx, store.LedgerPage{Hit: "bogus"}); err == nil {
			t.Fatal("an unknown counter must be an error")
		}
		evs, err := s.LedgerFactEvents(ctx, f2.ID, 10, 0)
		if err != nil || len(evs) != 2 || evs[0].Operation != store.LedgerOpDeny || evs[0].ToolCallID != "c4" || evs[0].Session != "s1" ||
			evs[1].Operation != store.LedgerOpRecord || !evs[0].At.After(evs[1].At) {
			t.Fatalf("events of %d: %+v, %v", f2.ID, evs, err)
		}
		if evs, err := s.LedgerFactEvents(ctx, f2.ID, 1, 1); err != nil || len(evs) != 1 || evs[0].Operation != store.LedgerOpRecord {
			t.Fatalf("second page of events: %+v, %v", evs, err)
		}
		if sc, err := s.LedgerScopes(ctx, 10); err != nil || fmt.Sprint(sc) != "[/v /w]" {
			t.Fatalf("scopes: %v, %v", sc, err)
		}
	})
}
