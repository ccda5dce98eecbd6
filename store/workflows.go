package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Workflow run statuses. A failed run can come back to running when an
// operator retries its failed steps and they succeed.
const (
	WorkflowRunning   = "running"
	WorkflowSucceeded = "succeeded"
	WorkflowFailed    = "failed"
	WorkflowCancelled = "cancelled"
)

// Workflow step statuses. A step is pending until its dependencies succeed,
// enqueued once its River job exists (also while that job waits for a
// retry), and running while a worker holds it.
const (
	WorkflowStepPending   = "pending"
	WorkflowStepEnqueued  = "enqueued"
	WorkflowStepRunning   = "running"
	WorkflowStepSucceeded = "succeeded"
	WorkflowStepFailed    = "failed"
	WorkflowStepCancelled = "cancelled"
)

// WorkflowRun is one run of a workflow definition. Its JSON form is what
// the CLI and the admin API show.
type WorkflowRun struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	// Input is the JSON every step can read.
	Input json.RawMessage `json:"input"`
	// Error says why the run failed: "step NAME: …".
	Error      string     `json:"error,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Steps is filled by GetWorkflowRun, in definition order.
	Steps []WorkflowStep `json:"steps,omitempty"`
}

// WorkflowStep is one step of a run: a node of its DAG and the River job
// that works it.
type WorkflowStep struct {
	RunID    string `json:"run_id"`
	Name     string `json:"name"`
	Position int    `json:"position"`
	Kind     string `json:"kind"`
	// Args is the step job's full args as River stores them, so a pending
	// step can be enqueued later without knowing its Go type.
	Args   json.RawMessage `json:"args"`
	Deps   []string        `json:"deps"`
	Status string          `json:"status"`
	// JobID is the step's current River job; zero before it is enqueued.
	JobID int64 `json:"job_id,omitempty"`
	// Waiting counts the dependencies that have not succeeded yet; the
	// step is enqueued when it reaches 0.
	Waiting int `json:"-"`
	// Output is the JSON the step returned; dependents read it.
	Output     json.RawMessage `json:"output,omitempty"`
	Error      string          `json:"error,omitempty"`
	Attempts   int             `json:"attempts"`
	StartedAt  *time.Time      `json:"started_at,omitempty"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
}

// WorkflowFilter narrows ListWorkflowRuns. Empty fields match everything.
type WorkflowFilter struct {
	Status string
	Name   string
	// Limit defaults to 50 and is capped at 1000.
	Limit int
}

// querier is what *sql.DB and *sql.Tx share, so a read serves both the
// read API and code already inside a transaction.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const (
	runColumns  = `id, name, status, input, error, created_at, updated_at, finished_at`
	stepColumns = `run_id, name, position, kind, args, deps, status, job_id, error, attempts, started_at, finished_at, waiting`
)

// LockWorkflowRun reads a run (without steps) and, on Postgres, locks its
// row until tx ends. Only the rare moves of a whole run take it (fail,
// cancel, revive, reconcile, and a leaf closing), and they take it before
// any step's row and any River job's row, except a success (a leaf
// closing, or one in a run that is not running), which holds its own
// running row, one no run-locking transaction waits for, and completes its
// job only after. SQLite needs no lock: its transactions are immediate and
// run one at a time.
func (s *Store) LockWorkflowRun(ctx context.Context, tx *sql.Tx, id string) (WorkflowRun, error) {
	q := `select ` + runColumns + ` from workflow_runs where id = $1`
	if s.Dialect == Postgres {
		q += ` for update`
	}
	run, err := scanRun(tx.QueryRowContext(ctx, q, id))
	if errors.Is(err, sql.ErrNoRows) {
		return run, fmt.Errorf("workflow run %s: %w", id, ErrNotFound)
	}
	return run, err
}

// WorkflowRunStatus reads a run's status through q, without locking it:
// for code that holds other locks and must not wait for the run's after
// them (the consolidate planner holds its workspace's state, which a run's
// last step locks too, in its Apply).
func (s *Store) WorkflowRunStatus(ctx context.Context, q querier, id string) (string, error) {
	var status string
	err := q.QueryRowContext(ctx, `select status from workflow_runs where id = $1`, id).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("workflow run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("read workflow run %s: %w", id, err)
	}
	return status, nil
}

// WorkflowStepOutputs reads the outputs of some of a run's steps, by name.
func (s *Store) WorkflowStepOutputs(ctx context.Context, tx *sql.Tx, runID string, names []string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if len(names) == 0 {
		return out, nil
	}
	args := []any{runID}
	marks := make([]string, len(names))
	for i, n := range names {
		args = append(args, n)
		marks[i] = "$" + strconv.Itoa(i+2)
	}
	rows, err := tx.QueryContext(ctx, `select name, output from workflow_steps
		where run_id = $1 and name in (`+strings.Join(marks, ", ")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read workflow outputs of %s: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var output sql.NullString
		if err := rows.Scan(&name, &output); err != nil {
			return nil, err
		}
		if output.Valid {
			out[name] = json.RawMessage(output.String)
		}
	}
	return out, rows.Err()
}

// StartWorkflowStep marks a step running for one attempt of its job.
func (s *Store) StartWorkflowStep(ctx context.Context, tx *sql.Tx, runID, name string, attempt int) error {
	return s.updateStep(ctx, tx, runID, name, `status = $3, attempts = $4, started_at = $5, finished_at = null`,
		WorkflowStepRunning, attempt, s.Now())
}

// SucceedWorkflowStep records a step's output and success, unless it has
// succeeded before, and returns its run's status: in one statement, as it
// is on the path of every step. ok is false when nothing was recorded (the
// step had succeeded, or does not exist). On Postgres the step's row stays
// locked until tx ends.
func (s *Store) SucceedWorkflowStep(ctx context.Context, tx *sql.Tx, runID, name string, output json.RawMessage) (string, bool, error) {
	var status string
	err := tx.QueryRowContext(ctx, `update workflow_steps set status = $3, output = $4, error = '', finished_at = $5
		where run_id = $1 and name = $2 and status <> $3
		returning (select status from workflow_runs where id = $1)`,
		runID, name, WorkflowStepSucceeded, string(output), s.Now()).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("succeed workflow step %s/%s: %w", runID, name, err)
	}
	return status, true, nil
}

// StepStart is what an attempt that starts its step reads.
type StepStart struct {
	Deps      []string
	Input     json.RawMessage
	RunStatus string
	// Outputs are the dependencies' outputs, by name.
	Outputs map[string]json.RawMessage
}

// TryStartWorkflowStep marks a step running for one attempt of job jobID
// and reads what the step may read, in one statement (through q, which may
// be the database itself: the statement is its own transaction), when that
// is plainly what should happen: the job still works the step, the step is
// enqueued, running (an attempt after a crash) or failed (an operator's
// retry), and the run is running or failed. ok is false otherwise, and
// nothing was written. On Postgres a step a sibling is cancelling is waited
// for and then seen cancelled.
func (s *Store) TryStartWorkflowStep(ctx context.Context, q querier, runID, name string, jobID int64, attempt int) (StepStart, bool, error) {
	outputs := `(select json_group_object(d.name, json(d.output)) from workflow_steps d
		where d.run_id = $1 and d.output is not null and d.name in (select value from json_each(workflow_steps.deps)))`
	if s.Dialect == Postgres {
		// One lookup by key per dependency: Postgres otherwise reads
		// every step of the run, making a start cost O(width). The limit
		// keeps the lateral from being flattened into that join.
		outputs = `(select json_object_agg(e.name, o.output::json)::text
			from jsonb_array_elements_text(workflow_steps.deps::jsonb) as e(name),
			lateral (select d.output from workflow_steps d where d.run_id = $1 and d.name = e.name limit 1) as o
			where o.output is not null)`
	}
	var st StepStart
	var deps, input string
	var outs sql.NullString
	err := q.QueryRowContext(ctx, `update workflow_steps set status = $5, attempts = $4, started_at = $6, finished_at = null
		where run_id = $1 and name = $2 and job_id = $3 and status in ($7, $5, $8)
		  and (select status from workflow_runs where id = $1) in ($9, $10)
		returning deps, (select input from workflow_runs where id = $1), (select status from workflow_runs where id = $1), `+outputs,
		runID, name, jobID, attempt, WorkflowStepRunning, s.Now(), WorkflowStepEnqueued, WorkflowStepFailed,
		WorkflowRunning, WorkflowFailed).Scan(&deps, &input, &st.RunStatus, &outs)
	if errors.Is(err, sql.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("start workflow step %s/%s: %w", runID, name, err)
	}
	if err := json.Unmarshal([]byte(deps), &st.Deps); err != nil {
		return st, false, fmt.Errorf("workflow step %s/%s: bad deps %q: %w", runID, name, deps, err)
	}
	st.Input, st.Outputs = json.RawMessage(input), map[string]json.RawMessage{}
	if outs.Valid {
		if err := json.Unmarshal([]byte(outs.String), &st.Outputs); err != nil {
			return st, false, fmt.Errorf("workflow step %s/%s: dependencies' outputs: %w", runID, name, err)
		}
	}
	return st, true, nil
}

// RetryWorkflowStep records a failed attempt whose job River will retry:
// the step is enqueued again, with the error kept for operators.
func (s *Store) RetryWorkflowStep(ctx context.Context, tx *sql.Tx, runID, name, errText string) error {
	return s.updateStep(ctx, tx, runID, name, `status = $3, error = $4`, WorkflowStepEnqueued, errText)
}

// FinishWorkflowStep ends a step as failed or cancelled, with the reason.
func (s *Store) FinishWorkflowStep(ctx context.Context, tx *sql.Tx, runID, name, status, errText string) error {
	return s.updateStep(ctx, tx, runID, name, `status = $3, error = $4, finished_at = $5`, status, errText, s.Now())
}

// SetWorkflowStepJob records the River job that works a step.
func (s *Store) SetWorkflowStepJob(ctx context.Context, tx *sql.Tx, runID, name string, jobID int64) error {
	return s.updateStep(ctx, tx, runID, name, `job_id = $3`, jobID)
}

// CancelWorkflowSteps cancels a run's steps that are in one of the given
// statuses and returns the jobs of those that had one, to cancel with them.
// On Postgres a step another transaction is enqueueing or starting is
// waited for and then judged on its committed status.
func (s *Store) CancelWorkflowSteps(ctx context.Context, tx *sql.Tx, runID, reason string, statuses ...string) ([]int64, error) {
	if len(statuses) == 0 {
		return nil, nil
	}
	args := []any{runID, WorkflowStepCancelled, reason, s.Now()}
	marks := make([]string, len(statuses))
	for i, st := range statuses {
		args = append(args, st)
		marks[i] = "$" + strconv.Itoa(i+5)
	}
	rows, err := tx.QueryContext(ctx, `update workflow_steps set status = $2, error = $3, finished_at = $4
		where run_id = $1 and status in (`+strings.Join(marks, ", ")+`) returning job_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("cancel workflow steps of %s: %w", runID, err)
	}
	return scanJobIDs(rows)
}

// RunningWorkflowJobs lists the jobs of a run's running steps.
func (s *Store) RunningWorkflowJobs(ctx context.Context, tx *sql.Tx, runID string) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `select job_id from workflow_steps where run_id = $1 and status = $2`,
		runID, WorkflowStepRunning)
	if err != nil {
		return nil, fmt.Errorf("list running workflow steps of %s: %w", runID, err)
	}
	return scanJobIDs(rows)
}

func scanJobIDs(rows *sql.Rows) ([]int64, error) {
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id sql.NullInt64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		if id.Valid && id.Int64 != 0 {
			ids = append(ids, id.Int64)
		}
	}
	return ids, rows.Err()
}

// RequeueWorkflowSteps makes a run's cancelled steps pending again, as if
// they had never been enqueued; it revives a failed run.
func (s *Store) RequeueWorkflowSteps(ctx context.Context, tx *sql.Tx, runID string) error {
	_, err := tx.ExecContext(ctx, `update workflow_steps
		set status = $2, job_id = null, error = '', attempts = 0, started_at = null, finished_at = null
		where run_id = $1 and status = $3`, runID, WorkflowStepPending, WorkflowStepCancelled)
	if err != nil {
		return fmt.Errorf("requeue workflow steps of %s: %w", runID, err)
	}
	return nil
}

// SetWorkflowRunStatus changes a run's status and error. A run that is not
// running gets a finished time; a running one loses it.
func (s *Store) SetWorkflowRunStatus(ctx context.Context, tx *sql.Tx, id, status, errText string) error {
	now := s.Now()
	var finished *time.Time
	if status != WorkflowRunning {
		finished = &now
	}
	_, err := tx.ExecContext(ctx, `update workflow_runs set status = $2, error = $3, updated_at = $4, finished_at = $5
		where id = $1`, id, status, errText, now, finished)
	if err != nil {
		return fmt.Errorf("set workflow run %s %s: %w", id, status, err)
	}
	return nil
}

// ActiveWorkflowSteps lists every step that is enqueued or running, with
// its job id, so a sweep can check those jobs still exist and are alive.
func (s *Store) ActiveWorkflowSteps(ctx context.Context) ([]WorkflowStep, error) {
	rows, err := s.DB.QueryContext(ctx, `select `+stepColumns+` from workflow_steps
		where status in ($1, $2) and job_id is not null order by run_id, position`,
		WorkflowStepEnqueued, WorkflowStepRunning)
	if err != nil {
		return nil, fmt.Errorf("list active workflow steps: %w", err)
	}
	return scanSteps(rows, false)
}

// ListWorkflowRuns lists runs, newest first, without their steps.
func (s *Store) ListWorkflowRuns(ctx context.Context, f WorkflowFilter) ([]WorkflowRun, error) {
	limit := min(cmp.Or(f.Limit, 50), 1000)
	rows, err := s.DB.QueryContext(ctx, `select `+runColumns+` from workflow_runs
		where ($1 = '' or status = $1) and ($2 = '' or name = $2)
		order by created_at desc, id desc limit $3`, f.Status, f.Name, limit)
	if err != nil {
		return nil, fmt.Errorf("list workflow runs: %w", err)
	}
	defer rows.Close()
	var out []WorkflowRun
	for rows.Next() {
		run, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	return out, rows.Err()
}

// GetWorkflowRun reads a run with all its steps and their outputs, or
// ErrNotFound.
func (s *Store) GetWorkflowRun(ctx context.Context, id string) (WorkflowRun, error) {
	run, err := scanRun(s.DB.QueryRowContext(ctx, `select `+runColumns+` from workflow_runs where id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return run, fmt.Errorf("workflow run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return run, err
	}
	run.Steps, err = workflowSteps(ctx, s.DB, id, true)
	return run, err
}

func (s *Store) updateStep(ctx context.Context, tx *sql.Tx, runID, name, set string, args ...any) error {
	_, err := tx.ExecContext(ctx, `update workflow_steps set `+set+` where run_id = $1 and name = $2`,
		append([]any{runID, name}, args...)...)
	if err != nil {
		return fmt.Errorf("update workflow step %s/%s: %w", runID, name, err)
	}
	return nil
}

func workflowSteps(ctx context.Context, q querier, runID string, withOutput bool) ([]WorkflowStep, error) {
	cols := stepColumns
	if withOutput {
		cols += `, output`
	}
	rows, err := q.QueryContext(ctx, `select `+cols+` from workflow_steps where run_id = $1 order by position`, runID)
	if err != nil {
		return nil, fmt.Errorf("read workflow steps of %s: %w", runID, err)
	}
	return scanSteps(rows, withOutput)
}

type scanner interface{ Scan(dest ...any) error }

func scanRun(row scanner) (WorkflowRun, error) {
	var r WorkflowRun
	var input string
	var finished sql.NullTime
	if err := row.Scan(&r.ID, &r.Name, &r.Status, &input, &r.Error, &r.CreatedAt, &r.UpdatedAt, &finished); err != nil {
		return r, err
	}
	r.Input = json.RawMessage(input)
	r.CreatedAt, r.UpdatedAt, r.FinishedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC(), utcPtr(finished)
	return r, nil
}

func scanSteps(rows *sql.Rows, withOutput bool) ([]WorkflowStep, error) {
	defer rows.Close()
	var out []WorkflowStep
	for rows.Next() {
		var st WorkflowStep
		var args, deps string
		var jobID sql.NullInt64
		var output sql.NullString
		var started, finished sql.NullTime
		dest := []any{&st.RunID, &st.Name, &st.Position, &st.Kind, &args, &deps, &st.Status, &jobID,
			&st.Error, &st.Attempts, &started, &finished, &st.Waiting}
		if withOutput {
			dest = append(dest, &output)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(deps), &st.Deps); err != nil {
			return nil, fmt.Errorf("workflow step %s/%s: bad deps %q: %w", st.RunID, st.Name, deps, err)
		}
		st.Args, st.JobID = json.RawMessage(args), jobID.Int64
		st.StartedAt, st.FinishedAt = utcPtr(started), utcPtr(finished)
		if output.Valid {
			st.Output = json.RawMessage(output.String)
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

func utcPtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}
