package benches

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
)

// view is a run as the service shows it.
func (s *Service) view(r store.BenchRun, cells []bench.Cell, p store.BenchProgress) Run {
	return Run{ID: r.ID, Kind: r.Kind, RefinementID: r.RefinementID, Reference: r.ReferenceID, Candidate: r.CandidateID,
		Workspace: r.Workspace, Set: r.Set, CaseIDs: r.CaseIDs, Runs: r.Runs, Options: r.Options, Executor: r.Executor,
		Status: r.Status, WorkflowID: r.WorkflowRunID, By: r.By, Cells: cells, Decision: r.Decision,
		Total: len(r.CaseIDs) * 2 * r.Runs, Done: p.Done, Failed: p.Failed, Tokens: p.Tokens,
		CostUSD: float64(p.CostNanoUSD) / 1e9, Created: r.CreatedAt, Decided: r.DecidedAt}
}

// ordered puts a run's cells in its decision's input order: by the run's
// case order, then iteration, then the reference before the candidate
// (the seed's evaluation order).
func ordered(r store.BenchRun, recs []store.BenchCellRecord) []bench.Cell {
	pos := map[string]int{}
	for i, id := range r.CaseIDs {
		pos[id] = i
	}
	side := func(s bench.Side) int {
		if s == bench.Reference {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(recs, func(a, b store.BenchCellRecord) int {
		if d := pos[a.CaseID] - pos[b.CaseID]; d != 0 {
			return d
		}
		if d := a.Iteration - b.Iteration; d != 0 {
			return d
		}
		return side(a.Side) - side(b.Side)
	})
	out := make([]bench.Cell, len(recs))
	for i, c := range recs {
		out[i] = c.Cell
	}
	return out
}

func (s *Service) run(ctx context.Context, id string) (Run, error) {
	db := s.store.DB
	r, err := s.store.GetBenchRun(ctx, db, id, false)
	if err != nil {
		return Run{}, err
	}
	recs, err := s.store.BenchCells(ctx, db, id)
	if err != nil {
		return Run{}, err
	}
	p, err := s.store.BenchRunProgress(ctx, db, id, r.WorkflowRunID)
	if err != nil {
		return Run{}, err
	}
	return s.view(r, ordered(r, recs), p), nil
}

func (s *Service) runs(ctx context.Context, f RunFilter) ([]Run, error) {
	switch f.Kind {
	case "", KindRefinement, KindMemory:
	default:
		return nil, &FieldError{Field: "kind", Problem: fmt.Sprintf("%q is not refinement or memory", f.Kind)}
	}
	switch f.Status {
	case "", store.BenchRunning, store.BenchDecided, store.BenchFailed, store.BenchCancelled:
	default:
		return nil, &FieldError{Field: "status", Problem: fmt.Sprintf("%q is not running, decided, failed or cancelled", f.Status)}
	}
	if f.Limit < 0 || f.Limit > 1000 {
		return nil, &FieldError{Field: "limit", Problem: fmt.Sprintf("%d is not between 1 and 1000", f.Limit)}
	}
	db := s.store.DB
	rows, err := s.store.ListBenchRuns(ctx, db, store.BenchRunFilter{Kind: f.Kind, Status: f.Status, Limit: f.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		p, err := s.store.BenchRunProgress(ctx, db, r.ID, r.WorkflowRunID)
		if err != nil {
			return nil, err
		}
		out[i] = s.view(r, nil, p)
	}
	return out, nil
}

// sideSnapshot is the id of the snapshot side runs on.
func sideSnapshot(r store.BenchRun, side bench.Side) (string, error) {
	switch side {
	case bench.Reference:
		return r.ReferenceID, nil
	case bench.Candidate:
		return r.CandidateID, nil
	}
	return "", fmt.Errorf("bench run %s: side %q is not reference or candidate: %w", r.ID, side, ErrNotFound)
}

func (s *Service) cellInput(ctx context.Context, runID, caseID string, side bench.Side) (CellInput, error) {
	db := s.store.DB
	r, err := s.store.GetBenchRun(ctx, db, runID, false)
	if err != nil {
		return CellInput{}, err
	}
	if !slices.Contains(r.CaseIDs, caseID) {
		return CellInput{}, fmt.Errorf("bench run %s has no case %s: %w", runID, caseID, ErrNotFound)
	}
	snapID, err := sideSnapshot(r, side)
	if err != nil {
		return CellInput{}, err
	}
	c, err := s.store.GetBenchCase(ctx, db, caseID)
	if err != nil {
		return CellInput{}, err
	}
	if c.State != bench.Frozen || c.Hash != bench.CaseHash(c) {
		return CellInput{}, fmt.Errorf("benchmark case %s: frozen case hash mismatch (stored %q)", caseID, c.Hash)
	}
	sn, err := s.store.GetBenchSnapshot(ctx, db, snapID)
	if err != nil {
		return CellInput{}, err
	}
	if err := checkHash(sn); err != nil {
		return CellInput{}, err
	}
	return CellInput{Run: s.view(r, nil, store.BenchProgress{}), Case: c, Snapshot: sn}, nil
}

// checkCell refuses a cell that is not one of its run's: an unknown case,
// side or iteration, another snapshot, or a score learn/bench refuses.
func checkCell(r store.BenchRun, c bench.Cell) error {
	name := fmt.Sprintf("bench run %s: cell %s %s/%d", r.ID, c.Side, c.CaseID, c.Iteration)
	if !slices.Contains(r.CaseIDs, c.CaseID) {
		return fmt.Errorf("%s: the run has no case %s", name, c.CaseID)
	}
	if c.Iteration < 1 || c.Iteration > r.Runs {
		return fmt.Errorf("%s: iteration must be between 1 and %d", name, r.Runs)
	}
	snap, err := sideSnapshot(r, c.Side)
	if err != nil {
		return err
	}
	if c.SnapshotID != snap {
		return fmt.Errorf("%s: ran on snapshot %q, but the side's snapshot is %s", name, c.SnapshotID, snap)
	}
	if err := bench.ValidateCell(c); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (s *Service) recordCellTx(ctx context.Context, tx *sql.Tx, c bench.Cell) (bool, error) {
	r, err := s.store.GetBenchRun(ctx, tx, c.RunID, false)
	if err != nil {
		return false, err
	}
	if c.SnapshotID == "" {
		c.SnapshotID, _ = sideSnapshot(r, c.Side)
	}
	if err := checkCell(r, c); err != nil {
		return false, err
	}
	if c.RecordedAt.IsZero() {
		c.RecordedAt = s.store.Now()
	}
	job, attempt, err := s.store.WorkflowStepJob(ctx, tx, r.WorkflowRunID, CellStep(c.CaseID, c.Side, c.Iteration))
	if err != nil {
		return false, err
	}
	ok, err := s.store.InsertBenchCell(ctx, tx, store.BenchCellRecord{Cell: c, JobID: job, Attempt: attempt})
	if err != nil {
		return false, err
	}
	if !ok {
		s.logger.InfoContext(ctx, "bench cell recorded already: the first record stands", "run", c.RunID,
			"side", c.Side, "case", c.CaseID, "iteration", c.Iteration)
	}
	return ok, nil
}

// ErrCellsMissing is deciding a run that lacks some of its cells: the
// decision is made over every cell or not at all.
var ErrCellsMissing = errors.New("cells missing")

func (s *Service) decideTx(ctx context.Context, tx *sql.Tx, runID string, now time.Time) (bench.Decision, error) {
	r, err := s.store.GetBenchRun(ctx, tx, runID, true)
	if err != nil {
		return bench.Decision{}, err
	}
	if r.Decision != nil {
		return *r.Decision, nil
	}
	recs, err := s.store.BenchCells(ctx, tx, runID)
	if err != nil {
		return bench.Decision{}, err
	}
	if total := len(r.CaseIDs) * 2 * r.Runs; len(recs) != total {
		return bench.Decision{}, fmt.Errorf("bench run %s: %d of %d cells recorded: %w", runID, len(recs), total, ErrCellsMissing)
	}
	d, err := bench.Decide(r.ID, r.RefinementID, ordered(r, recs), r.Options, now)
	if err != nil {
		return bench.Decision{}, fmt.Errorf("bench run %s: decide: %w", runID, err)
	}
	ok, err := s.store.DecideBenchRun(ctx, tx, runID, d, now)
	if err != nil {
		return bench.Decision{}, err
	}
	if !ok {
		return bench.Decision{}, fmt.Errorf("bench run %s: decided by another transaction meanwhile", runID)
	}
	s.logger.InfoContext(ctx, "bench run decided", "run", runID, "status", d.Status, "reasons", d.Reasons)
	return d, nil
}
