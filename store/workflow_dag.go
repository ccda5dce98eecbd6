package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A step's completion touches only its own row, its dependents' rows and,
// for a leaf, its run's row, so what a step costs does not grow with the
// width of its run: workflow_edges finds the dependents by the step they
// depend on, workflow_waits counts the dependencies each step still waits
// for, dealt into buckets, workflow_steps.waiting the buckets that still
// wait, and workflow_runs.open_leaves the leaves not yet succeeded.

// workflowInsertChunk is how many rows one multi-row insert carries: few round
// trips for a wide run, far below either database's parameter limit.
const workflowInsertChunk = 100

// InsertWorkflowRun inserts a run, its steps and their dependency edges,
// stamping the run with the store's clock. Only Name, Status, Kind, Args
// and Deps of the steps are read; their position is their index. Every
// step waits for all its dependencies; the run waits for its leaves.
func (s *Store) InsertWorkflowRun(ctx context.Context, tx *sql.Tx, run WorkflowRun) error {
	now := s.Now()
	if _, err := tx.ExecContext(ctx, `insert into workflow_runs (id, name, status, input, created_at, updated_at, open_leaves)
		values ($1, $2, $3, $4, $5, $5, $6)`, run.ID, run.Name, run.Status, string(run.Input), now, leaves(run.Steps)); err != nil {
		return fmt.Errorf("insert workflow run %s: %w", run.ID, err)
	}
	var steps, edges, waits [][]any
	for i, st := range run.Steps {
		deps := []byte("[]")
		if len(st.Deps) > 0 {
			deps, _ = json.Marshal(st.Deps) // a []string always marshals
		}
		buckets := bucketsFor(len(st.Deps))
		steps = append(steps, []any{run.ID, st.Name, i, st.Kind, string(st.Args), string(deps), st.Status, buckets})
		for j, dep := range st.Deps {
			edges = append(edges, []any{run.ID, dep, st.Name, j % buckets})
		}
		for b := range buckets {
			waits = append(waits, []any{run.ID, st.Name, b, (len(st.Deps) - b + buckets - 1) / buckets})
		}
	}
	for _, rows := range []struct {
		table string
		rows  [][]any
	}{
		{`workflow_steps (run_id, name, position, kind, args, deps, status, waiting)`, steps},
		{`workflow_edges (run_id, dep, step, bucket)`, edges},
		{`workflow_waits (run_id, step, bucket, waiting)`, waits},
	} {
		if err := insertRows(ctx, tx, rows.table, rows.rows); err != nil {
			return fmt.Errorf("insert %s of %s: %w", rows.table, run.ID, err)
		}
	}
	return nil
}

// bucketsFor says into how many buckets n dependencies are dealt: about
// √n, so neither a bucket's row nor the step's is taken by more than about
// √n successes.
func bucketsFor(n int) int {
	b := 0
	for b*b < n {
		b++
	}
	return b
}

// leaves counts the steps no other step depends on.
func leaves(steps []WorkflowStep) int {
	depended := map[string]bool{}
	for _, st := range steps {
		for _, dep := range st.Deps {
			depended[dep] = true
		}
	}
	return len(steps) - len(depended)
}

// insertRows inserts rows into table (with its column list) workflowInsertChunk at
// a time.
func insertRows(ctx context.Context, tx *sql.Tx, table string, rows [][]any) error {
	for start := 0; start < len(rows); start += workflowInsertChunk {
		chunk := rows[start:min(start+workflowInsertChunk, len(rows))]
		var args []any
		values := make([]string, len(chunk))
		for i, row := range chunk {
			marks := make([]string, len(row))
			for j, v := range row {
				args = append(args, v)
				marks[j] = "$" + strconv.Itoa(len(args))
			}
			values[i] = "(" + strings.Join(marks, ", ") + ")"
		}
		if _, err := tx.ExecContext(ctx, `insert into `+table+` values `+strings.Join(values, ", "), args...); err != nil {
			return err
		}
	}
	return nil
}

// ReadWorkflowRun reads a run without its steps and without locking it.
func (s *Store) ReadWorkflowRun(ctx context.Context, tx *sql.Tx, id string) (WorkflowRun, error) {
	run, err := scanRun(tx.QueryRowContext(ctx, `select `+runColumns+` from workflow_runs where id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return run, fmt.Errorf("workflow run %s: %w", id, ErrNotFound)
	}
	return run, err
}

// RowLock says how WorkflowStepTx locks the step's row on Postgres
// (SQLite's transactions run one at a time and need none).
type RowLock int

const (
	// NoLock reads the row as it is.
	NoLock RowLock = iota
	// Lock waits for the row and holds it until tx ends.
	Lock
	// SkipLocked holds it too, but a row another transaction holds reads
	// as missing instead of being waited for.
	SkipLocked
)

// WorkflowStepTx reads one step, without its output; ok is false when it
// does not exist (or, with SkipLocked, is held). An attempt's start and end
// hold their own step's row while they decide, so a sibling cancelling what
// has not started waits for them and then sees the step running, or has
// cancelled it first.
func (s *Store) WorkflowStepTx(ctx context.Context, tx *sql.Tx, runID, name string, lock RowLock) (WorkflowStep, bool, error) {
	q := `select ` + stepColumns + ` from workflow_steps where run_id = $1 and name = $2`
	if s.Dialect == Postgres && lock == Lock {
		q += ` for update`
	}
	if s.Dialect == Postgres && lock == SkipLocked {
		q += ` for update skip locked`
	}
	rows, err := tx.QueryContext(ctx, q, runID, name)
	if err != nil {
		return WorkflowStep{}, false, fmt.Errorf("read workflow step %s/%s: %w", runID, name, err)
	}
	steps, err := scanSteps(rows, false)
	if err != nil || len(steps) == 0 {
		return WorkflowStep{}, false, err
	}
	return steps[0], true, nil
}

// Unblocked is what a step's success did to its dependents.
type Unblocked struct {
	// Dependents is how many steps come after the step; none makes it a leaf.
	Dependents int
	// Ready is how many of them are pending with nothing left to wait for.
	Ready int
}

// UnblockWorkflowDependents takes the succeeded step dep off the count of
// every step that comes after it: off its bucket, and off the step when
// that was the bucket's last. The decrements of dependencies finishing at
// once are serialized on the bucket's row, then on the step's, so exactly
// one of them sees a step ready. On Postgres buckets are locked before
// steps, each in name order, so two successes never deadlock. Call it once
// per step, when it succeeds.
func (s *Store) UnblockWorkflowDependents(ctx context.Context, tx *sql.Tx, runID, dep string) (Unblocked, error) {
	var u Unblocked
	emptied, err := s.decrement(ctx, tx, runID, dep, &u)
	if err != nil || len(emptied) == 0 {
		return u, err
	}
	names, _ := json.Marshal(emptied) // strings always marshal
	q := `update workflow_steps set waiting = waiting - 1
		where run_id = $1 and name in (select value from json_each($2))
		returning status, waiting`
	if s.Dialect == Postgres {
		q = `with locked as (
			select name from workflow_steps
			where run_id = $1 and name in (select json_array_elements_text($2::json)) order by name for update)
		update workflow_steps w set waiting = w.waiting - 1 from locked
		where w.run_id = $1 and w.name = locked.name
		returning w.status, w.waiting`
	}
	rows, err := tx.QueryContext(ctx, q, runID, string(names))
	if err != nil {
		return u, fmt.Errorf("unblock dependents of workflow step %s/%s: %w", runID, dep, err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var waiting int
		if err := rows.Scan(&status, &waiting); err != nil {
			return u, err
		}
		if waiting == 0 && status == WorkflowStepPending {
			u.Ready++
		}
	}
	return u, rows.Err()
}

// decrement takes dep off its bucket of every step after it, counts those
// steps in u.Dependents and returns the steps whose bucket it emptied.
func (s *Store) decrement(ctx context.Context, tx *sql.Tx, runID, dep string, u *Unblocked) ([]string, error) {
	q := `update workflow_waits set waiting = waiting - 1
		where run_id = $1 and (step, bucket) in (select step, bucket from workflow_edges where run_id = $1 and dep = $2)
		returning step, waiting`
	if s.Dialect == Postgres {
		q = `with locked as (
			select w.step, w.bucket from workflow_waits w
			join workflow_edges e on e.run_id = w.run_id and e.step = w.step and e.bucket = w.bucket
			where e.run_id = $1 and e.dep = $2 order by w.step, w.bucket for update of w)
		update workflow_waits w set waiting = w.waiting - 1 from locked
		where w.run_id = $1 and w.step = locked.step and w.bucket = locked.bucket
		returning w.step, w.waiting`
	}
	rows, err := tx.QueryContext(ctx, q, runID, dep)
	if err != nil {
		return nil, fmt.Errorf("unblock dependents of workflow step %s/%s: %w", runID, dep, err)
	}
	defer rows.Close()
	var emptied []string
	for rows.Next() {
		var step string
		var waiting int
		if err := rows.Scan(&step, &waiting); err != nil {
			return nil, err
		}
		u.Dependents++
		if waiting == 0 {
			emptied = append(emptied, step)
		}
	}
	return emptied, rows.Err()
}

// ClaimReadyWorkflowSteps moves to enqueued the pending steps of a run that
// wait for nothing, all of them or (dep not "") only those that come after
// dep, and returns them (name, position, kind, args) in definition order.
// Only the claimer inserts a step's job, so no step is enqueued twice.
func (s *Store) ClaimReadyWorkflowSteps(ctx context.Context, tx *sql.Tx, runID, dep string) ([]WorkflowStep, error) {
	q := `update workflow_steps set status = $2, job_id = null, error = '', finished_at = null
		where run_id = $1 and status = $3 and waiting = 0`
	args := []any{runID, WorkflowStepEnqueued, WorkflowStepPending}
	if dep != "" {
		q += ` and name in (select step from workflow_edges where run_id = $1 and dep = $4)`
		args = append(args, dep)
	}
	rows, err := tx.QueryContext(ctx, q+` returning name, position, kind, args`, args...)
	if err != nil {
		return nil, fmt.Errorf("claim ready workflow steps of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []WorkflowStep
	for rows.Next() {
		st := WorkflowStep{RunID: runID, Status: WorkflowStepEnqueued}
		var args string
		if err := rows.Scan(&st.Name, &st.Position, &st.Kind, &args); err != nil {
			return nil, err
		}
		st.Args = json.RawMessage(args)
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b WorkflowStep) int { return a.Position - b.Position })
	return out, rows.Err()
}

// SetWorkflowStepJobs records the River jobs that work some of a run's
// steps, by step name: in one statement on Postgres, one prepared
// statement a step on SQLite, where a join with the pairs' JSON scanned
// every pair for every step of the run (a fan-out's enqueue cost O(width²)).
func (s *Store) SetWorkflowStepJobs(ctx context.Context, tx *sql.Tx, runID string, jobs map[string]int64) error {
	if len(jobs) == 0 {
		return nil
	}
	if s.Dialect != Postgres {
		for name, id := range jobs {
			if err := s.SetWorkflowStepJob(ctx, tx, runID, name, id); err != nil {
				return err
			}
		}
		return nil
	}
	type pair struct {
		Name  string `json:"name"`
		JobID int64  `json:"job_id"`
	}
	pairs := make([]pair, 0, len(jobs))
	for name, id := range jobs {
		pairs = append(pairs, pair{name, id})
	}
	body, _ := json.Marshal(pairs) // strings and ints always marshal
	_, err := tx.ExecContext(ctx, `update workflow_steps w set job_id = v.job_id
		from json_to_recordset($2::json) as v(name text, job_id bigint)
		where w.run_id = $1 and w.name = v.name`, runID, string(body))
	if err != nil {
		return fmt.Errorf("set workflow step jobs of %s: %w", runID, err)
	}
	return nil
}

// CloseWorkflowLeaf counts one more of a run's leaves as succeeded and
// returns how many are left and the run's status, read under the run's
// lock it takes until tx ends. None left means every step has succeeded.
func (s *Store) CloseWorkflowLeaf(ctx context.Context, tx *sql.Tx, runID string) (int, string, error) {
	var open int
	var status string
	err := tx.QueryRowContext(ctx, `update workflow_runs set open_leaves = open_leaves - 1
		where id = $1 returning open_leaves, status`, runID).Scan(&open, &status)
	if err != nil {
		return 0, "", fmt.Errorf("close a leaf of workflow run %s: %w", runID, err)
	}
	return open, status, nil
}

// CountWorkflowSteps counts a run's steps in a status. It reads every step
// of the run, so only the rare paths (reviving a failed run) use it.
func (s *Store) CountWorkflowSteps(ctx context.Context, tx *sql.Tx, runID, status string) (int, error) {
	var n int
	err := tx.QueryRowContext(ctx, `select count(*) from workflow_steps where run_id = $1 and status = $2`,
		runID, status).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count workflow steps of %s: %w", runID, err)
	}
	return n, nil
}
