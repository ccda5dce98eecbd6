package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The panel's run list pages newest first and narrows by kind, status and
// the refinement under test.
func TestPanelBenchRuns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if err := s.InsertBenchSnapshot(ctx, tx, bench.Snapshot{ID: "snap", Kind: bench.HarnessSnapshot, StateHash: "h", CapturedAt: at}); err != nil {
				return err
			}
			for i := range 4 {
				kind, ref := "refinement", fmt.Sprintf("refine_%d", i%2)
				if i == 3 {
					kind, ref = "memory", ""
				}
				if err := s.InsertBenchRun(ctx, tx, store.BenchRun{ID: fmt.Sprintf("run%d", i), Kind: kind, RefinementID: ref,
					ReferenceID: "snap", CandidateID: "snap", CaseIDs: []string{"c"}, Runs: 1, Executor: "llm",
					CreatedAt: at.Add(time.Duration(i) * time.Minute)}); err != nil {
					return err
				}
			}
			_, err := s.DecideBenchRun(ctx, tx, "run1", bench.Decision{RunID: "run1", Status: bench.Accepted}, at)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			f    store.PanelBenchRunFilter
			want []string
		}{
			{store.PanelBenchRunFilter{Limit: 2}, []string{"run3", "run2"}},
			{store.PanelBenchRunFilter{Limit: 2, Offset: 2}, []string{"run1", "run0"}},
			{store.PanelBenchRunFilter{Kind: "memory"}, []string{"run3"}},
			{store.PanelBenchRunFilter{Status: "decided"}, []string{"run1"}},
			{store.PanelBenchRunFilter{RefinementID: "refine_0"}, []string{"run2", "run0"}},
			{store.PanelBenchRunFilter{RefinementID: "refine_0", Status: "decided"}, nil},
		} {
			rows, err := s.PanelBenchRuns(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, r.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("runs %+v = %v, want %v", tc.f, got, tc.want)
			}
		}
	})
}
