package workflows

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/store"
)

// Locks, so that a step costs the same whatever the width of its run and
// two transactions never deadlock on Postgres. River's job rows come last
// in every transaction that takes a workflow row, and River's own
// transactions take job rows only: a success completes its job after all
// else, and the moves of a whole run cancel jobs after the run's and the
// steps' rows (a failure leaves its own job to River, after its commit). An
// attempt's start holds its own step's row, and completes the job of a step
// that had succeeded. A success holds its own row, then what its Apply
// writes; then, in a run that is not running, the run's; then the rows that
// count what the steps after it still wait for: their buckets, then those
// steps, each in name order; then, for a leaf, the run's; then its job's.
// The run's row is locked by the rare moves of a whole run (fail, cancel,
// reconcile) before any step's row, and after its own step's row only by a
// success, whose row is running: no transaction holding the run waits for a
// running row (cancels take pending and enqueued rows, a revival cancelled
// ones and the dependents of its step, which cannot have started; reconcile
// skips rows others hold; a failing attempt whose job no longer works its
// step locks nothing). Exactly-once enqueue rests on those counts,
// decremented under their rows' locks, and on the claim of a step (pending
// → enqueued) before its job is inserted.

// storedArgs inserts a step job from the args JSON kept in its step row.
type storedArgs struct {
	kind string
	args []byte
}

func (a storedArgs) Kind() string                 { return a.kind }
func (a storedArgs) MarshalJSON() ([]byte, error) { return a.args, nil }

// enqueueReady claims every pending step of the run that waits for
// nothing, all of them or (dep not "") those that come after dep, and
// inserts their jobs in one batch.
func (r *Runner) enqueueReady(ctx context.Context, tx *sql.Tx, client *engine.Client, runID, dep string) error {
	steps, err := r.store.ClaimReadyWorkflowSteps(ctx, tx, runID, dep)
	if err != nil || len(steps) == 0 {
		return err
	}
	params := make([]river.InsertManyParams, len(steps))
	for i, st := range steps {
		params[i] = river.InsertManyParams{Args: storedArgs{kind: st.Kind, args: st.Args},
			InsertOpts: &river.InsertOpts{Tags: []string{"workflow", runID}}}
	}
	res, err := client.InsertManyTx(ctx, tx, params)
	if err != nil {
		return fmt.Errorf("enqueue %d steps of %s: %w", len(steps), runID, err)
	}
	jobs := make(map[string]int64, len(res))
	for _, ins := range res {
		var w wireArgs
		if err := json.Unmarshal(ins.Job.EncodedArgs, &w); err != nil {
			return fmt.Errorf("enqueue steps of %s: job %d args: %w", runID, ins.Job.ID, err)
		}
		jobs[w.Step] = ins.Job.ID
	}
	if len(jobs) != len(steps) {
		return fmt.Errorf("enqueue steps of %s: %d jobs inserted for %d steps", runID, len(jobs), len(steps))
	}
	return r.store.SetWorkflowStepJobs(ctx, tx, runID, jobs)
}

// advance moves a run on after its step name succeeded; status is the
// run's status as that success read it. A running run is not locked: the
// success touches only the steps after name, and for a leaf the run's row
// at the very end. A run in any other state is locked, since the success
// may revive it: a failed run with no failed step left comes back to life.
// Then the steps after name count one dependency less, those left waiting
// for nothing are enqueued, and a leaf's success may finish the run.
func (r *Runner) advance(ctx context.Context, tx *sql.Tx, client *engine.Client, runID, status, name string) error {
	revived := false
	if status != store.WorkflowRunning {
		r.lockingRun(name)
		run, err := r.store.LockWorkflowRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if revived, err = r.revive(ctx, tx, &run); err != nil {
			return err
		}
		status = run.Status
	}
	u, err := r.store.UnblockWorkflowDependents(ctx, tx, runID, name)
	if err != nil {
		return err
	}
	switch {
	case status != store.WorkflowRunning:
	case revived:
		err = r.enqueueReady(ctx, tx, client, runID, "")
	case u.Ready > 0:
		err = r.enqueueReady(ctx, tx, client, runID, name)
	}
	if err != nil || u.Dependents > 0 {
		return err
	}
	r.lockingRun(name)
	return r.closeLeaf(ctx, tx, runID)
}

// lockingRun runs the test hook, if any, just before the success of step
// name takes its run's row.
func (r *Runner) lockingRun(name string) {
	if r.beforeRunLock != nil {
		r.beforeRunLock(name)
	}
}

// closeLeaf counts a leaf's success on its run, which succeeds with its
// last leaf: every step is a leaf or comes before one.
func (r *Runner) closeLeaf(ctx context.Context, tx *sql.Tx, runID string) error {
	open, status, err := r.store.CloseWorkflowLeaf(ctx, tx, runID)
	if err != nil || open > 0 || status != store.WorkflowRunning {
		return err
	}
	r.logger.InfoContext(ctx, "workflow run succeeded", "run_id", runID)
	return r.store.SetWorkflowRunStatus(ctx, tx, runID, store.WorkflowSucceeded, "")
}

// revive puts a failed run with no failed step left back to running and
// its cancelled steps back to pending, after an operator's retry made its
// last failed step succeed. The caller holds the run's lock.
func (r *Runner) revive(ctx context.Context, tx *sql.Tx, run *store.WorkflowRun) (bool, error) {
	if run.Status != store.WorkflowFailed {
		return false, nil
	}
	if n, err := r.store.CountWorkflowSteps(ctx, tx, run.ID, store.WorkflowStepFailed); err != nil || n > 0 {
		return false, err
	}
	if err := r.setRun(ctx, tx, run, store.WorkflowRunning, ""); err != nil {
		return false, err
	}
	if err := r.store.RequeueWorkflowSteps(ctx, tx, run.ID); err != nil {
		return false, err
	}
	r.logger.InfoContext(ctx, "workflow run revived", "run_id", run.ID, "workflow", run.Name)
	return true, nil
}

// record writes what onError decided for one step, failing the run when
// the outcome says so. The caller holds the run's lock.
func (r *Runner) record(ctx context.Context, tx *sql.Tx, client *engine.Client, run *store.WorkflowRun,
	name string, out outcome, reason string,
) error {
	var err error
	if out.step == store.WorkflowStepEnqueued {
		err = r.store.RetryWorkflowStep(ctx, tx, run.ID, name, reason)
	} else {
		err = r.store.FinishWorkflowStep(ctx, tx, run.ID, name, out.step, reason)
	}
	if err != nil || !out.failRun {
		return err
	}
	r.logger.WarnContext(ctx, "workflow run failed", "run_id", run.ID, "workflow", run.Name, "step", name, "error", reason)
	if err := r.setRun(ctx, tx, run, store.WorkflowFailed, fmt.Sprintf("step %s: %s", name, reason)); err != nil {
		return err
	}
	return r.cancelRest(ctx, tx, client, run.ID, "not started: step "+name+" failed", false)
}

// cancelRest cancels a run's steps that have not started, and their jobs.
// With stopRunning it also asks River to cancel the jobs of running steps
// (their workers see their context end); those steps are marked when their
// workers return. The caller holds the run's lock; running steps are read
// after the cancel, which on Postgres waited for any step starting.
func (r *Runner) cancelRest(ctx context.Context, tx *sql.Tx, client *engine.Client, runID, reason string, stopRunning bool) error {
	jobs, err := r.store.CancelWorkflowSteps(ctx, tx, runID, reason, store.WorkflowStepPending, store.WorkflowStepEnqueued)
	if err != nil {
		return err
	}
	if stopRunning {
		running, err := r.store.RunningWorkflowJobs(ctx, tx, runID)
		if err != nil {
			return err
		}
		jobs = append(jobs, running...)
	}
	for _, id := range jobs {
		if err := cancelJob(ctx, tx, client, id); err != nil {
			return err
		}
	}
	return nil
}

// cancelJob cancels a River job in tx; a job already gone is fine.
func cancelJob(ctx context.Context, tx *sql.Tx, client *engine.Client, id int64) error {
	if _, err := client.JobCancelTx(ctx, tx, id); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
		return fmt.Errorf("cancel job %d: %w", id, err)
	}
	return nil
}

func (r *Runner) setRun(ctx context.Context, tx *sql.Tx, run *store.WorkflowRun, status, errText string) error {
	if err := r.store.SetWorkflowRunStatus(ctx, tx, run.ID, status, errText); err != nil {
		return err
	}
	run.Status, run.Error = status, errText
	return nil
}
