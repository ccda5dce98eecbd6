package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
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

// The run list's progress is one query for every listed run, and sums what
// BenchRunProgress sums for each; the /llm page's run filter keeps the
// same calls; the run page reads its cases in one query.
func TestBenchRunsProgressAndCases(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		benchRun(t, s) // bench_1: case c1, snapshots ref and cand, no workflow
		frozenCase(t, s, "c2")
		wf := store.WorkflowRun{ID: "wf_a", Name: "bench", Status: store.WorkflowRunning, Input: json.RawMessage(`{}`),
			Steps: []store.WorkflowStep{{Name: "cell", Kind: "bench_cell", Args: json.RawMessage(`{}`), Status: store.WorkflowStepPending}}}
		cell := func(side bench.Side, status bench.CellStatus) store.BenchCellRecord {
			c := bench.Cell{RunID: "bench_1", Side: side, CaseID: "c1", Iteration: 1, Status: status, SnapshotID: "ref",
				StateHash: "h-ref", CaseHash: "hash-c1", RecordedAt: benchT0}
			if status == bench.CellOK {
				c.Score = score(50)
			} else {
				c.SnapshotID, c.StateHash, c.FailureReason = "cand", "h-cand", bench.Timeout
			}
			return store.BenchCellRecord{Cell: c, JobID: 21, Attempt: 1}
		}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if err := s.InsertBenchRun(ctx, tx, store.BenchRun{ID: "run_a", Kind: "memory", ReferenceID: "ref", CandidateID: "cand",
				CaseIDs: []string{"c1"}, Runs: 1, Executor: "llm", WorkflowRunID: "wf_a", CreatedAt: benchT0}); err != nil {
				return err
			}
			if err := s.InsertWorkflowRun(ctx, tx, wf); err != nil {
				return err
			}
			if err := s.SetWorkflowStepJob(ctx, tx, "wf_a", "cell", 13); err != nil {
				return err
			}
			for _, c := range []store.BenchCellRecord{cell(bench.Reference, bench.CellOK), cell(bench.Candidate, bench.CellFailed)} {
				if _, err := s.InsertBenchCell(ctx, tx, c); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for run, jobs := range map[string][]int64{"run_a": {11, 12, 11}, "bench_1": {21}} {
			for _, job := range jobs {
				if err := s.NoteBenchJob(ctx, s.DB, run, job); err != nil {
					t.Fatal(err)
				}
			}
		}
		for job, tokens := range map[int64]int64{11: 100, 12: 20, 13: 3, 21: 7, 99: 5000} {
			if err := s.InsertLLMCall(ctx, store.LLMCall{JobID: job, Kind: "bench_cell", Model: "m", PromptTokens: tokens,
				CostNanoUSD: tokens * 10, Outcome: "ok", CreatedAt: benchT0}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.BenchRunsProgress(ctx, s.DB, []string{"run_a", "bench_1", "run_none"})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]store.BenchProgress{"run_a": {Tokens: 123, CostNanoUSD: 1230}, "bench_1": {Done: 2, Failed: 1, Tokens: 7, CostNanoUSD: 70}}
		if !maps.Equal(got, want) {
			t.Errorf("progress = %+v, want %+v", got, want)
		}
		for run, wfID := range map[string]string{"run_a": "wf_a", "bench_1": ""} {
			one, err := s.BenchRunProgress(ctx, s.DB, run, wfID)
			if err != nil || one != got[run] {
				t.Errorf("BenchRunProgress(%s) = %+v, %v; the list says %+v", run, one, err, got[run])
			}
			calls, err := s.LLMCallPage(ctx, store.LLMCallFilter{BenchRunID: run, Limit: 10})
			var tokens int64
			for _, c := range calls {
				tokens += c.PromptTokens
			}
			if err != nil || tokens != got[run].Tokens {
				t.Errorf("/llm?run=%s lists %d calls of %d tokens (%v); the run's progress sums %d", run, len(calls), tokens, err, got[run].Tokens)
			}
			sums, err := s.SumLLMCalls(ctx, "kind", store.LLMCallFilter{BenchRunID: run})
			if err != nil || len(sums) != 1 || sums[0].CostNanoUSD != got[run].CostNanoUSD {
				t.Errorf("sum of run %s's calls = %+v, %v; want cost %d", run, sums, err, got[run].CostNanoUSD)
			}
		}
		if p, err := s.BenchRunsProgress(ctx, s.DB, nil); err != nil || len(p) != 0 {
			t.Errorf("no runs: %v, %v", p, err)
		}
		cases, err := s.GetBenchCases(ctx, s.DB, []string{"c2", "c1", "gone"})
		if err != nil || len(cases) != 2 || cases["c1"].Hash != "hash-c1" || cases["c2"].Title != "t c2" {
			t.Errorf("cases = %+v, %v; want c1 and c2 (frozen), no gone", cases, err)
		}
	})
}
