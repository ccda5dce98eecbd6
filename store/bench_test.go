package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

var benchT0 = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

func frozenCase(t *testing.T, s *store.Store, id string) bench.Case {
	t.Helper()
	ctx := context.Background()
	c := bench.Case{ID: id, Set: "demo", Title: "t " + id, Statement: "do " + id, Rubric: "mentions `x`", CreatedAt: benchT0}
	if err := s.InsertBenchCase(ctx, s.DB, c); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.FreezeBenchCase(ctx, s.DB, id, "hash-"+id, benchT0.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("freeze %s: ok %v, %v", id, ok, err)
	}
	got, err := s.GetBenchCase(ctx, s.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A frozen case is immutable at the database: a raw UPDATE of any column
// (material or not) and a DELETE fail, whatever code runs them; a draft
// still changes and can be deleted.
func TestBenchFrozenCaseImmutable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		c := frozenCase(t, s, "c1")
		if c.State != bench.Frozen || c.Hash != "hash-c1" || c.FrozenAt == nil || !c.FrozenAt.Equal(benchT0.Add(time.Minute)) {
			t.Fatalf("frozen case read %+v", c)
		}
		for _, q := range []string{
			`update bench_cases set statement = 'other' where id = 'c1'`,
			`update bench_cases set rubric = 'other' where id = 'c1'`,
			`update bench_cases set capability = 'x' where id = 'c1'`,
			`update bench_cases set title = 'renamed' where id = 'c1'`,
			`update bench_cases set state = 'draft', case_hash = '', frozen_at = null where id = 'c1'`,
			`delete from bench_cases where id = 'c1'`,
		} {
			if _, err := s.DB.ExecContext(ctx, q); err == nil {
				t.Errorf("%s: succeeded on a frozen case, want the database to refuse it", q)
			}
		}
		if got, _ := s.GetBenchCase(ctx, s.DB, "c1"); got.Statement != c.Statement || got.Title != c.Title {
			t.Errorf("frozen case changed: %+v", got)
		}
		if ok, err := s.UpdateBenchDraft(ctx, s.DB, bench.Case{ID: "c1", Title: "x", Statement: "y", Rubric: "z"}); err != nil || ok {
			t.Errorf("UpdateBenchDraft of a frozen case: ok %v, %v; want false, nil", ok, err)
		}
		if ok, err := s.FreezeBenchCase(ctx, s.DB, "c1", "again", benchT0); err != nil || ok {
			t.Errorf("freezing a frozen case again: ok %v, %v; want false, nil", ok, err)
		}
		// A draft changes, and a frozen row needs its hash.
		d := bench.Case{ID: "d1", Title: "t", Statement: "s", Rubric: "r", CreatedAt: benchT0}
		if err := s.InsertBenchCase(ctx, s.DB, d); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertBenchCase(ctx, s.DB, d); !errors.Is(err, store.ErrBenchCaseExists) {
			t.Errorf("a second insert of d1: %v, want ErrBenchCaseExists", err)
		}
		if ok, err := s.UpdateBenchDraft(ctx, s.DB, bench.Case{ID: "d1", Title: "t2", Statement: "s2", Rubric: "r2"}); err != nil || !ok {
			t.Fatalf("update draft: ok %v, %v", ok, err)
		}
		if _, err := s.DB.ExecContext(ctx, `update bench_cases set state = 'frozen' where id = 'd1'`); err == nil {
			t.Error("freezing without a hash and frozen_at succeeded, want the check to refuse it")
		}
		got, _ := s.GetBenchCase(ctx, s.DB, "d1")
		if got.Set != store.DefaultBenchSet || got.Statement != "s2" || got.State != bench.Draft || got.FrozenAt != nil {
			t.Errorf("draft read %+v", got)
		}
		list, err := s.ListBenchCases(ctx, s.DB, "", bench.Frozen)
		if err != nil || len(list) != 1 || list[0].ID != "c1" {
			t.Errorf("frozen cases = %+v, %v; want c1", list, err)
		}
	})
}

// Snapshots are written once: the database refuses an UPDATE and a
// DELETE, and a snapshot reads back exactly as stored (an empty entries
// map stays empty, so its hash still holds).
func TestBenchSnapshotsWrittenOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		sn := bench.Snapshot{ID: "ref", Kind: bench.HarnessSnapshot, Session: "s1", Entries: harness.State{},
			History: []string{"r1", "r2"}, StateHash: "h", CapturedAt: benchT0}
		if err := s.InsertBenchSnapshot(ctx, s.DB, sn); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertBenchSnapshot(ctx, s.DB, sn); !errors.Is(err, store.ErrBenchSnapshotExists) {
			t.Errorf("second insert: %v, want ErrBenchSnapshotExists", err)
		}
		for _, q := range []string{`update bench_snapshots set state_hash = 'x' where id = 'ref'`, `delete from bench_snapshots where id = 'ref'`} {
			if _, err := s.DB.ExecContext(ctx, q); err == nil {
				t.Errorf("%s: succeeded, want the database to refuse it", q)
			}
		}
		got, err := s.GetBenchSnapshot(ctx, s.DB, "ref")
		if err != nil {
			t.Fatal(err)
		}
		if got.Entries == nil || len(got.Entries) != 0 || !slices.Equal(got.History, sn.History) || !got.CapturedAt.Equal(benchT0) || got.Session != "s1" {
			t.Errorf("snapshot read %+v", got)
		}
		if _, err := s.GetBenchSnapshot(ctx, s.DB, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing snapshot: %v", err)
		}
	})
}

func benchRun(t *testing.T, s *store.Store) store.BenchRun {
	t.Helper()
	ctx := context.Background()
	frozenCase(t, s, "c1")
	for _, id := range []string{"ref", "cand"} {
		if err := s.InsertBenchSnapshot(ctx, s.DB, bench.Snapshot{ID: id, Kind: bench.MemorySnapshot, StateHash: "h-" + id, CapturedAt: benchT0}); err != nil {
			t.Fatal(err)
		}
	}
	r := store.BenchRun{ID: "bench_1", Kind: "memory", ReferenceID: "ref", CandidateID: "cand", CaseIDs: []string{"c1"}, Runs: 1,
		Options: bench.Options{PassThreshold: 60}, Executor: "llm", CreatedAt: benchT0}
	if err := s.InTx(ctx, func(tx *sql.Tx) error { return s.InsertBenchRun(ctx, tx, r) }); err != nil {
		t.Fatal(err)
	}
	return r
}

func score(v float64) *float64 { return &v }

// A cell is scored once: a second insert of the same cell (a replayed
// step) keeps the first and says so; the database refuses to change or
// delete a cell, and refuses a failed cell with a score (null, never 0).
func TestBenchCellScoredOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		benchRun(t, s)
		first := store.BenchCellRecord{Cell: bench.Cell{RunID: "bench_1", Side: bench.Reference, CaseID: "c1", Iteration: 1,
			Status: bench.CellOK, Score: score(70), Feedback: "good", SnapshotID: "ref", StateHash: "h-ref", CaseHash: "hash-c1",
			Evidence:   &bench.Evidence{Completed: true, Summary: "did", Actions: []string{"a"}, Observations: []string{}},
			RecordedAt: benchT0}, JobID: 7, Attempt: 1}
		second := first
		second.Score, second.Feedback, second.JobID, second.Attempt = score(10), "replayed", 8, 2
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if ok, err := s.InsertBenchCell(ctx, tx, first); err != nil || !ok {
				t.Errorf("first insert: ok %v, %v", ok, err)
			}
			if ok, err := s.InsertBenchCell(ctx, tx, second); err != nil || ok {
				t.Errorf("replayed insert: ok %v, %v; want false, nil", ok, err)
			}
			failed := first.Cell
			failed.Side, failed.SnapshotID, failed.Status, failed.FailureReason, failed.Evidence = bench.Candidate, "cand", bench.CellFailed, bench.Timeout, nil
			_, err := s.InsertBenchCell(ctx, tx, store.BenchCellRecord{Cell: failed})
			return err
		})
		if err == nil {
			t.Fatal("a failed cell with a score was stored, want the database to refuse it")
		}
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			if _, err := s.InsertBenchCell(ctx, tx, first); err != nil {
				return err
			}
			_, err := s.InsertBenchCell(ctx, tx, second)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`update bench_cells set score = 100`, `delete from bench_cells`} {
			if _, err := s.DB.ExecContext(ctx, q); err == nil {
				t.Errorf("%s: succeeded, want the database to refuse it", q)
			}
		}
		cells, err := s.BenchCells(ctx, s.DB, "bench_1")
		if err != nil || len(cells) != 1 {
			t.Fatalf("cells = %+v, %v", cells, err)
		}
		c := cells[0]
		if *c.Score != 70 || c.Feedback != "good" || c.JobID != 7 || c.Attempt != 1 || c.Evidence == nil || c.Evidence.Summary != "did" {
			t.Errorf("stored cell = %+v, want the first record", c)
		}
		p, err := s.BenchRunProgress(ctx, s.DB, "bench_1", "")
		if err != nil || p.Done != 1 || p.Failed != 0 {
			t.Errorf("progress = %+v, %v", p, err)
		}
	})
}

// A run is decided once: the second decision is refused (ok false) and a
// raw update of a decided run fails at the database.
func TestBenchRunDecidedOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		benchRun(t, s)
		d := bench.Decision{RunID: "bench_1", Status: bench.Accepted, PassThreshold: 60, CreatedAt: benchT0}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			r, err := s.GetBenchRun(ctx, tx, "bench_1", true)
			if err != nil || r.Status != store.BenchRunning || r.Decision != nil {
				t.Errorf("run before = %+v, %v", r, err)
			}
			if ok, err := s.DecideBenchRun(ctx, tx, "bench_1", d, benchT0); err != nil || !ok {
				t.Errorf("decide: ok %v, %v", ok, err)
			}
			d2 := d
			d2.Status = bench.Rejected
			if ok, err := s.DecideBenchRun(ctx, tx, "bench_1", d2, benchT0); err != nil || ok {
				t.Errorf("second decide: ok %v, %v; want false, nil", ok, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.DB.ExecContext(ctx, `update bench_runs set by_whom = 'x'`); err == nil {
			t.Error("updating a decided run succeeded, want the database to refuse it")
		}
		r, err := s.GetBenchRun(ctx, s.DB, "bench_1", false)
		if err != nil || r.Status != store.BenchDecided || r.Decision == nil || r.Decision.Status != bench.Accepted || r.DecidedAt == nil {
			t.Errorf("run after = %+v, %v", r, err)
		}
		list, err := s.ListBenchRuns(ctx, s.DB, store.BenchRunFilter{Status: store.BenchDecided})
		if err != nil || len(list) != 1 || !slices.Equal(list[0].CaseIDs, []string{"c1"}) {
			t.Errorf("decided runs = %+v, %v", list, err)
		}
		if list, _ := s.ListBenchRuns(ctx, s.DB, store.BenchRunFilter{Status: store.BenchRunning}); len(list) != 0 {
			t.Errorf("running runs = %+v, want none", list)
		}
	})
}

// HarnessCommits lists a scope's refinements in commit order even when
// their committed_at ties (one clock tick).
func TestHarnessCommitsOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ids := []string{"refine_b", "refine_a", "refine_c"}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			for i, id := range ids {
				key := "global"
				if i == 1 {
					key = "session:s1"
				}
				r := store.HarnessRefinement{Refinement: harness.Refinement{ID: id, CommittedAt: benchT0}, ScopeKey: key, Source: "admin"}
				if err := s.InsertHarnessRefinement(ctx, tx, r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.HarnessCommits(ctx, s.DB, []string{"global", "session:s1"})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, c := range got {
			order = append(order, c.ID)
		}
		if !slices.Equal(order, ids) {
			t.Errorf("commit order = %v, want %v", order, ids)
		}
		if got, _ := s.HarnessCommits(ctx, s.DB, []string{"global"}); len(got) != 2 {
			t.Errorf("global commits = %+v, want 2", got)
		}
	})
}

// A run's progress sums the LLM calls of every job its cells were
// attempted in, noted once each however often noted, and of its steps'
// current jobs: the calls of a revived step's earlier job still count;
// another job's calls do not.
func TestBenchRunProgressCountsEveryJob(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		benchRun(t, s)
		wf := store.WorkflowRun{ID: "wf_1", Name: "bench", Status: store.WorkflowRunning, Input: json.RawMessage(`{}`),
			Steps: []store.WorkflowStep{{Name: "cell", Kind: "bench_cell", Args: json.RawMessage(`{}`), Status: store.WorkflowStepPending}}}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if err := s.InsertWorkflowRun(ctx, tx, wf); err != nil {
				return err
			}
			return s.SetWorkflowStepJob(ctx, tx, "wf_1", "cell", 13) // the step's current job
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, job := range []int64{11, 12, 11} { // 11, then revived as 12
			if err := s.NoteBenchJob(ctx, s.DB, "bench_1", job); err != nil {
				t.Fatal(err)
			}
		}
		for job, tokens := range map[int64]int64{11: 100, 12: 20, 13: 3, 99: 5000} {
			if err := s.InsertLLMCall(ctx, store.LLMCall{JobID: job, Kind: "bench_cell", Model: "m", PromptTokens: tokens,
				CostNanoUSD: tokens * 10, Outcome: "ok", CreatedAt: benchT0}); err != nil {
				t.Fatal(err)
			}
		}
		p, err := s.BenchRunProgress(ctx, s.DB, "bench_1", "wf_1")
		if err != nil || p.Tokens != 123 || p.CostNanoUSD != 1230 {
			t.Errorf("progress = %+v, %v; want 123 tokens (jobs 11, 12 and 13), cost 1230", p, err)
		}
	})
}

// Cases list in the order they were added (created_at, then id), across
// sets too: not by set and id.
func TestListBenchCasesInInsertionOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for i, c := range []struct{ id, set string }{{"zeta", "b"}, {"alpha", "b"}, {"mid", "a"}, {"beta", "b"}} {
			at := benchT0.Add(time.Duration(i) * time.Second)
			if i == 3 {
				at = benchT0.Add(time.Second) // alpha's time: the tie goes by id
			}
			if err := s.InsertBenchCase(ctx, s.DB, bench.Case{ID: c.id, Set: c.set, Title: "t", Statement: "s", Rubric: "r", CreatedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		for set, want := range map[string][]string{"": {"zeta", "alpha", "beta", "mid"}, "b": {"zeta", "alpha", "beta"}} {
			cs, err := s.ListBenchCases(ctx, s.DB, set, "")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cs {
				got = append(got, c.ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("set %q: %v, want %v", set, got, want)
			}
		}
	})
}
