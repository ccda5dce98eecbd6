package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/bench"
)

// Benchmark run statuses. The row holds running or decided; failed and
// cancelled are read from the run's workflow (BenchRun.Status).
const (
	BenchRunning   = "running"
	BenchDecided   = "decided"
	BenchFailed    = "failed"
	BenchCancelled = "cancelled"
)

// BenchRun is one benchmark run's row.
type BenchRun struct {
	ID string
	// Kind is "refinement" or "memory".
	Kind          string
	RefinementID  string
	ReferenceID   string
	CandidateID   string
	Workspace     string
	Set           string
	CaseIDs       []string
	Runs          int
	Options       bench.Options
	Executor      string
	WorkflowRunID string
	By            string
	// Status is the row's (running, decided), or the workflow's failed or
	// cancelled while the row is not decided.
	Status    string
	Decision  *bench.Decision
	CreatedAt time.Time
	DecidedAt *time.Time
}

// benchRunStatus is a run's status as readers see it: decided once the
// decision is recorded, else its workflow's failed or cancelled, else the
// row's.
const benchRunStatus = `case when r.status = 'decided' then 'decided'
	when w.status in ('failed', 'cancelled') then w.status else r.status end`

const benchRunSelect = `select r.id, r.kind, r.refinement_id, r.reference_id, r.candidate_id, r.workspace, r.set_name,
	r.case_ids, r.runs, r.options, r.executor, r.workflow_run_id, r.by_whom, ` + benchRunStatus + ` as eff_status,
	r.decision, r.created_at, r.decided_at
	from bench_runs r left join workflow_runs w on w.id = r.workflow_run_id`

func scanBenchRun(row scanner) (BenchRun, error) {
	var r BenchRun
	var caseIDs, options string
	var decision sql.NullString
	var decided sql.NullTime
	if err := row.Scan(&r.ID, &r.Kind, &r.RefinementID, &r.ReferenceID, &r.CandidateID, &r.Workspace, &r.Set, &caseIDs,
		&r.Runs, &options, &r.Executor, &r.WorkflowRunID, &r.By, &r.Status, &decision, &r.CreatedAt, &decided); err != nil {
		return r, err
	}
	r.CreatedAt, r.DecidedAt = r.CreatedAt.UTC(), utcPtr(decided)
	if err := json.Unmarshal([]byte(caseIDs), &r.CaseIDs); err != nil {
		return r, fmt.Errorf("bench run %s: case ids: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(options), &r.Options); err != nil {
		return r, fmt.Errorf("bench run %s: options: %w", r.ID, err)
	}
	if decision.Valid {
		r.Decision = new(bench.Decision)
		if err := json.Unmarshal([]byte(decision.String), r.Decision); err != nil {
			return r, fmt.Errorf("bench run %s: decision: %w", r.ID, err)
		}
	}
	return r, nil
}

// InsertBenchRun stores a new running run.
func (s *Store) InsertBenchRun(ctx context.Context, tx *sql.Tx, r BenchRun) error {
	caseIDs, err := json.Marshal(r.CaseIDs)
	if err != nil {
		return fmt.Errorf("store bench run %s: %w", r.ID, err)
	}
	options, err := json.Marshal(r.Options)
	if err != nil {
		return fmt.Errorf("store bench run %s: %w", r.ID, err)
	}
	if _, err := tx.ExecContext(ctx, `insert into bench_runs (id, kind, refinement_id, reference_id, candidate_id,
		workspace, set_name, case_ids, runs, options, executor, status, workflow_run_id, by_whom, created_at)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'running', $12, $13, $14)`,
		r.ID, r.Kind, r.RefinementID, r.ReferenceID, r.CandidateID, r.Workspace, r.Set, string(caseIDs), r.Runs,
		string(options), r.Executor, r.WorkflowRunID, r.By, utcMicro(r.CreatedAt)); err != nil {
		return fmt.Errorf("store bench run %s: %w", r.ID, err)
	}
	return nil
}

// GetBenchRun reads one run, or an error wrapping ErrNotFound. With lock,
// on Postgres, its row is locked until tx ends (the decide step's, so two
// decisions cannot interleave); q must then be that tx.
func (s *Store) GetBenchRun(ctx context.Context, q querier, id string, lock bool) (BenchRun, error) {
	query := benchRunSelect + ` where r.id = $1`
	if lock && s.Dialect == Postgres {
		query += ` for update of r`
	}
	r, err := scanBenchRun(q.QueryRowContext(ctx, query, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("bench run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("read bench run %s: %w", id, err)
	}
	return r, nil
}

// BenchRunFilter narrows ListBenchRuns; empty fields match everything.
type BenchRunFilter struct {
	Kind   string
	Status string
	// Limit defaults to 50 and is capped at 1000.
	Limit int
}

// ListBenchRuns lists runs, newest first.
func (s *Store) ListBenchRuns(ctx context.Context, q querier, f BenchRunFilter) ([]BenchRun, error) {
	where, args := []string{"1 = 1"}, []any{}
	if f.Kind != "" {
		args = append(args, f.Kind)
		where = append(where, "kind = $"+strconv.Itoa(len(args)))
	}
	if f.Status != "" {
		args = append(args, f.Status)
		where = append(where, "eff_status = $"+strconv.Itoa(len(args)))
	}
	args = append(args, clampLimit(f.Limit))
	out, err := queryAll(ctx, q, scanBenchRun, `select * from (`+benchRunSelect+`) x where `+strings.Join(where, " and ")+` order by created_at desc, id desc limit $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list bench runs: %w", err)
	}
	return out, nil
}

// DecideBenchRun records a running run's decision; ok is false when the
// run was decided already (the stored decision stands).
func (s *Store) DecideBenchRun(ctx context.Context, tx *sql.Tx, id string, d bench.Decision, at time.Time) (ok bool, err error) {
	js, err := json.Marshal(d)
	if err != nil {
		return false, fmt.Errorf("decide bench run %s: %w", id, err)
	}
	res, err := tx.ExecContext(ctx, `update bench_runs set status = 'decided', decision = $2, decided_at = $3
		where id = $1 and status = 'running'`, id, string(js), utcMicro(at))
	if err != nil {
		return false, fmt.Errorf("decide bench run %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// BenchCellRecord is a cell with the step job that recorded it.
type BenchCellRecord struct {
	bench.Cell
	JobID   int64
	Attempt int
}

// InsertBenchCell records a cell once: a cell already recorded for the
// same run, side, case and iteration is kept, and ok is false.
func (s *Store) InsertBenchCell(ctx context.Context, tx *sql.Tx, c BenchCellRecord) (ok bool, err error) {
	var evidence, log any
	if c.Evidence != nil {
		js, err := json.Marshal(c.Evidence)
		if err != nil {
			return false, fmt.Errorf("store bench cell: evidence: %w", err)
		}
		evidence = string(js)
	}
	if len(c.Log) > 0 {
		log = string(c.Log)
	}
	var score any
	if c.Score != nil {
		score = *c.Score
	}
	res, err := tx.ExecContext(ctx, `insert into bench_cells (run_id, side, case_id, iteration, status, score,
		failure_reason, detail, feedback, evidence, log, snapshot_id, state_hash, case_hash, duration_ms, job_id, attempt,
		recorded_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
		on conflict (run_id, side, case_id, iteration) do nothing`,
		c.RunID, string(c.Side), c.CaseID, c.Iteration, string(c.Status), score, string(c.FailureReason), c.Detail,
		c.Feedback, evidence, log, c.SnapshotID, c.StateHash, c.CaseHash, c.DurationMS, c.JobID, c.Attempt,
		utcMicro(c.RecordedAt))
	if err != nil {
		return false, fmt.Errorf("store bench cell %s %s %s/%d: %w", c.RunID, c.Side, c.CaseID, c.Iteration, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// BenchCells lists a run's cells by case, iteration, then side
// (reference before candidate); callers order cases as the run does.
func (s *Store) BenchCells(ctx context.Context, q querier, runID string) ([]BenchCellRecord, error) {
	out, err := queryAll(ctx, q, scanBenchCell, `select run_id, side, case_id, iteration, status, score, failure_reason,
		detail, feedback, evidence, log, snapshot_id, state_hash, case_hash, duration_ms, job_id, attempt, recorded_at
		from bench_cells where run_id = $1
		order by case_id, iteration, case when side = 'reference' then 0 else 1 end`, runID)
	if err != nil {
		return nil, fmt.Errorf("list cells of bench run %s: %w", runID, err)
	}
	return out, nil
}

func scanBenchCell(row scanner) (BenchCellRecord, error) {
	var c BenchCellRecord
	var side, status, reason string
	var score sql.NullFloat64
	var evidence, log sql.NullString
	if err := row.Scan(&c.RunID, &side, &c.CaseID, &c.Iteration, &status, &score, &reason, &c.Detail, &c.Feedback,
		&evidence, &log, &c.SnapshotID, &c.StateHash, &c.CaseHash, &c.DurationMS, &c.JobID, &c.Attempt,
		&c.RecordedAt); err != nil {
		return c, err
	}
	c.Side, c.Status, c.FailureReason = bench.Side(side), bench.CellStatus(status), bench.FailureReason(reason)
	c.RecordedAt = c.RecordedAt.UTC()
	if score.Valid {
		v := score.Float64
		c.Score = &v
	}
	if evidence.Valid {
		c.Evidence = new(bench.Evidence)
		if err := json.Unmarshal([]byte(evidence.String), c.Evidence); err != nil {
			return c, fmt.Errorf("bench cell %s %s %s/%d: evidence: %w", c.RunID, side, c.CaseID, c.Iteration, err)
		}
	}
	if log.Valid {
		c.Log = json.RawMessage(log.String)
	}
	return c, nil
}

// BenchProgress is how far a run is.
type BenchProgress struct {
	// Done counts recorded cells, Failed those recorded failed.
	Done, Failed int
	// Tokens and CostNanoUSD sum the LLM calls of the run's step jobs.
	Tokens      int64
	CostNanoUSD int64
}

// NoteBenchJob records that a cell of run is attempted in job, once
// however often it is noted, so the run's progress counts the job's LLM
// calls even after a revived step moves on to a new job.
func (s *Store) NoteBenchJob(ctx context.Context, q querier, runID string, jobID int64) error {
	_, err := q.ExecContext(ctx, `insert into bench_jobs (run_id, job_id) values ($1, $2)
		on conflict (run_id, job_id) do nothing`, runID, jobID)
	if err != nil {
		return fmt.Errorf("note job %d of bench run %s: %w", jobID, runID, err)
	}
	return nil
}

// BenchRunProgress counts a run's recorded cells and sums the LLM calls
// made by every job its cells were attempted in (bench_jobs), and by its
// steps' current jobs (workflow_steps: runs started before bench_jobs).
func (s *Store) BenchRunProgress(ctx context.Context, q querier, runID, workflowRunID string) (BenchProgress, error) {
	var p BenchProgress
	err := q.QueryRowContext(ctx, `select count(*), coalesce(sum(case when status = 'failed' then 1 else 0 end), 0)
		from bench_cells where run_id = $1`, runID).Scan(&p.Done, &p.Failed)
	if err != nil {
		return p, fmt.Errorf("count cells of bench run %s: %w", runID, err)
	}
	err = q.QueryRowContext(ctx, `select coalesce(sum(prompt_tokens + completion_tokens), 0), coalesce(sum(cost_nano_usd), 0)
		from llm_calls where job_id in (select job_id from bench_jobs where run_id = $1
			union select job_id from workflow_steps where run_id = $2 and job_id is not null)`,
		runID, workflowRunID).Scan(&p.Tokens, &p.CostNanoUSD)
	if err != nil {
		return p, fmt.Errorf("sum llm calls of bench run %s: %w", runID, err)
	}
	return p, nil
}

// WorkflowStepJob reads the current job id and attempt count of one step
// of a workflow run (zero when the step has no job yet, or no such step).
func (s *Store) WorkflowStepJob(ctx context.Context, q querier, runID, step string) (jobID int64, attempts int, err error) {
	var job sql.NullInt64
	err = q.QueryRowContext(ctx, `select job_id, attempts from workflow_steps where run_id = $1 and name = $2`,
		runID, step).Scan(&job, &attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read workflow step %s/%s: %w", runID, step, err)
	}
	return job.Int64, attempts, nil
}
