package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The panel's harness lists page through refinements and reviews newest
// first with their filters, and list the scopes holding live entries
// (global first, tombstones not counted).
func TestPanelHarnessLists(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			for i := range 5 {
				key, src := "global", "job"
				if i%2 == 1 {
					key, src = "session:s1", "admin"
				}
				r := store.HarnessRefinement{Refinement: harness.Refinement{ID: fmt.Sprintf("r%d", i), Summary: "s",
					CommittedAt: at.Add(time.Duration(i) * time.Minute)}, ScopeKey: key, Source: src}
				if err := s.InsertHarnessRefinement(ctx, tx, r); err != nil {
					return err
				}
				outcome := harness.Approved
				if i == 4 {
					outcome = harness.Declined
				}
				if _, err := s.InsertHarnessReview(ctx, tx, store.HarnessReview{At: at.Add(time.Duration(i) * time.Minute),
					SessionID: "s1", ScopeKey: key, Trigger: harness.Manual, Outcome: outcome, RefinementID: r.Refinement.ID}); err != nil {
					return err
				}
			}
			for _, v := range []store.HarnessVersion{
				{ScopeKey: "session:s1", Entry: harness.Entry{ID: "a", Kind: harness.KindMemory, Version: 1, UpdatedAt: at.Add(time.Hour)}},
				{ScopeKey: "session:s1", Entry: harness.Entry{ID: "gone", Kind: harness.KindMemory, Version: 2, UpdatedAt: at.Add(2 * time.Hour)}, Deleted: true},
				{ScopeKey: "global", Entry: harness.Entry{ID: "b", Kind: harness.KindPrompt, Version: 1, UpdatedAt: at}},
				{ScopeKey: "global", Entry: harness.Entry{ID: "c", Kind: harness.KindPrompt, Version: 1, UpdatedAt: at}},
			} {
				v.RecordedAt = v.Entry.UpdatedAt
				if err := s.PutHarnessVersion(ctx, tx, v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		ids := func(f store.PanelRefinementFilter) []string {
			t.Helper()
			rows, err := s.PanelHarnessRefinements(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range rows {
				out = append(out, r.Refinement.ID)
			}
			return out
		}
		for _, tc := range []struct {
			f    store.PanelRefinementFilter
			want []string
		}{
			{store.PanelRefinementFilter{Limit: 2}, []string{"r4", "r3"}},
			{store.PanelRefinementFilter{Limit: 2, Offset: 2}, []string{"r2", "r1"}},
			{store.PanelRefinementFilter{Limit: 2, Offset: 4}, []string{"r0"}},
			{store.PanelRefinementFilter{ScopeKey: "session:s1"}, []string{"r3", "r1"}},
			{store.PanelRefinementFilter{Source: "job", Offset: 1}, []string{"r2", "r0"}},
		} {
			if got := ids(tc.f); !slices.Equal(got, tc.want) {
				t.Errorf("refinements %+v = %v, want %v", tc.f, got, tc.want)
			}
		}
		reviews := func(f store.PanelReviewFilter) []string {
			t.Helper()
			rows, err := s.PanelHarnessReviews(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range rows {
				out = append(out, r.RefinementID)
			}
			return out
		}
		for _, tc := range []struct {
			f    store.PanelReviewFilter
			want []string
		}{
			{store.PanelReviewFilter{Limit: 3, Offset: 1}, []string{"r3", "r2", "r1"}},
			{store.PanelReviewFilter{Outcome: "declined"}, []string{"r4"}},
			{store.PanelReviewFilter{RefinementID: "r2", Session: "s1"}, []string{"r2"}},
			{store.PanelReviewFilter{Session: "s2"}, nil},
		} {
			if got := reviews(tc.f); !slices.Equal(got, tc.want) {
				t.Errorf("reviews %+v = %v, want %v", tc.f, got, tc.want)
			}
		}
		scopes, err := s.PanelHarnessScopes(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(scopes) != 2 || scopes[0].ScopeKey != "global" || scopes[0].Entries != 2 || scopes[1].ScopeKey != "session:s1" ||
			scopes[1].Entries != 1 || !scopes[1].UpdatedAt.Equal(at.Add(time.Hour)) {
			t.Errorf("scopes = %+v", scopes)
		}
	})
}

// An entry's injections list the sessions it reached, latest first, a page
// at a time, and none of another entry's or store's.
func TestEntryInjections(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		for i, in := range []store.HarnessInjection{
			{ScopeKey: "global", Kind: harness.KindSkill, ID: "a", SessionID: "s1"},
			{ScopeKey: "global", Kind: harness.KindSkill, ID: "a", SessionID: "s2"},
			{ScopeKey: "global", Kind: harness.KindSkill, ID: "a", SessionID: "s1"},
			{ScopeKey: "global", Kind: harness.KindSkill, ID: "b", SessionID: "s1"},
			{ScopeKey: "session:s3", Kind: harness.KindSkill, ID: "a", SessionID: "s3"},
		} {
			in.LastInjectedAt = at.Add(time.Duration(i) * time.Minute)
			if err := s.AddHarnessInjection(ctx, s.DB, in); err != nil {
				t.Fatal(err)
			}
		}
		page := func(limit, offset int) []string {
			rows, err := s.EntryInjections(ctx, "global", string(harness.KindSkill), "a", limit, offset)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, fmt.Sprintf("%s:%d", r.SessionID, r.Count))
			}
			return got
		}
		if got := page(10, 0); !slices.Equal(got, []string{"s1:2", "s2:1"}) {
			t.Errorf("injections of global skill a = %v, want [s1:2 s2:1] (latest first)", got)
		}
		if got := page(1, 1); !slices.Equal(got, []string{"s2:1"}) {
			t.Errorf("second page = %v, want [s2:1]", got)
		}
	})
}
