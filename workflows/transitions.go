package workflows

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/store"
)

// Everything here runs inside a transaction that holds the run's row (see
// store.LockWorkflowRun) and keeps the steps slice, read under that lock,
// in step with what it writes.

// storedArgs inserts a step job from the args JSON kept in its step row.
type storedArgs struct {
	kind string
	args []byte
}

func (a storedArgs) Kind() string                 { return a.kind }
func (a storedArgs) MarshalJSON() ([]byte, error) { return a.args, nil }

// enqueueReady inserts the job of every pending step whose dependencies all
// succeeded. A step is claimed (pending → enqueued) before its job is
// inserted, so two transactions can never both enqueue it.
func (r *Runner) enqueueReady(ctx context.Context, tx *sql.Tx, client *engine.Client, runID string, steps []store.WorkflowStep) error {
	for _, name := range ready(steps) {
		claimed, err := r.store.ClaimWorkflowStep(ctx, tx, runID, name)
		if err != nil {
			return err
		}
		if !claimed {
			continue
		}
		st := find(steps, name)
		res, err := client.InsertTx(ctx, tx, storedArgs{kind: st.Kind, args: st.Args},
			&river.InsertOpts{Tags: []string{"workflow", runID}})
		if err != nil {
			return fmt.Errorf("enqueue step %q of %s: %w", name, runID, err)
		}
		if err := r.store.SetWorkflowStepJob(ctx, tx, runID, name, res.Job.ID); err != nil {
			return err
		}
		st.Status, st.JobID = store.WorkflowStepEnqueued, res.Job.ID
	}
	return nil
}

// advance moves a run on after one of its steps succeeded: a failed run
// with no failed step left comes back to life, then a running run either
// finishes or enqueues what is now ready.
func (r *Runner) advance(ctx context.Context, tx *sql.Tx, client *engine.Client, run *store.WorkflowRun, steps []store.WorkflowStep) error {
	if run.Status == store.WorkflowFailed && count(steps, store.WorkflowStepFailed) == 0 {
		if err := r.revive(ctx, tx, run, steps); err != nil {
			return err
		}
	}
	if run.Status != store.WorkflowRunning {
		return nil
	}
	if count(steps, store.WorkflowStepSucceeded) == len(steps) {
		r.logger.InfoContext(ctx, "workflow run succeeded", "run_id", run.ID, "workflow", run.Name)
		return r.setRun(ctx, tx, run, store.WorkflowSucceeded, "")
	}
	return r.enqueueReady(ctx, tx, client, run.ID, steps)
}

// revive puts a failed run back to running and its cancelled steps back to
// pending, after an operator's retry made its last failed step succeed.
func (r *Runner) revive(ctx context.Context, tx *sql.Tx, run *store.WorkflowRun, steps []store.WorkflowStep) error {
	if err := r.setRun(ctx, tx, run, store.WorkflowRunning, ""); err != nil {
		return err
	}
	if err := r.store.RequeueWorkflowSteps(ctx, tx, run.ID); err != nil {
		return err
	}
	for i := range steps {
		if steps[i].Status == store.WorkflowStepCancelled {
			steps[i].Status, steps[i].JobID = store.WorkflowStepPending, 0
		}
	}
	r.logger.InfoContext(ctx, "workflow run revived", "run_id", run.ID, "workflow", run.Name)
	return nil
}

// record writes what onError decided for one step, failing the run when
// the outcome says so.
func (r *Runner) record(ctx context.Context, tx *sql.Tx, client *engine.Client, run *store.WorkflowRun,
	steps []store.WorkflowStep, name string, out outcome, reason string,
) error {
	var err error
	if out.step == store.WorkflowStepEnqueued {
		err = r.store.RetryWorkflowStep(ctx, tx, run.ID, name, reason)
	} else {
		err = r.store.FinishWorkflowStep(ctx, tx, run.ID, name, out.step, reason)
	}
	if err != nil {
		return err
	}
	find(steps, name).Status = out.step
	if !out.failRun {
		return nil
	}
	r.logger.WarnContext(ctx, "workflow run failed", "run_id", run.ID, "workflow", run.Name, "step", name, "error", reason)
	if err := r.setRun(ctx, tx, run, store.WorkflowFailed, fmt.Sprintf("step %s: %s", name, reason)); err != nil {
		return err
	}
	return r.cancelRest(ctx, tx, client, run.ID, steps, "not started: step "+name+" failed", false)
}

// cancelRest cancels a run's steps that have not started, and their jobs.
// With stopRunning it also asks River to cancel the jobs of running steps
// (their workers see their context end); those steps are marked when their
// workers return.
func (r *Runner) cancelRest(ctx context.Context, tx *sql.Tx, client *engine.Client, runID string,
	steps []store.WorkflowStep, reason string, stopRunning bool,
) error {
	if _, err := r.store.CancelWorkflowSteps(ctx, tx, runID, reason,
		store.WorkflowStepPending, store.WorkflowStepEnqueued); err != nil {
		return err
	}
	for i := range steps {
		st := &steps[i]
		stop := st.Status == store.WorkflowStepEnqueued || (stopRunning && st.Status == store.WorkflowStepRunning)
		if st.Status == store.WorkflowStepPending || st.Status == store.WorkflowStepEnqueued {
			st.Status = store.WorkflowStepCancelled
		}
		if stop && st.JobID != 0 {
			if err := cancelJob(ctx, tx, client, st.JobID); err != nil {
				return err
			}
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

// lockRun reads a run and its steps under the run's lock.
func (r *Runner) lockRun(ctx context.Context, tx *sql.Tx, runID string) (store.WorkflowRun, []store.WorkflowStep, error) {
	run, err := r.store.LockWorkflowRun(ctx, tx, runID)
	if err != nil {
		return run, nil, err
	}
	steps, err := r.store.WorkflowStepsTx(ctx, tx, runID)
	return run, steps, err
}

// find returns the named step, or nil.
func find(steps []store.WorkflowStep, name string) *store.WorkflowStep {
	for i := range steps {
		if steps[i].Name == name {
			return &steps[i]
		}
	}
	return nil
}

func count(steps []store.WorkflowStep, status string) int {
	n := 0
	for _, st := range steps {
		if st.Status == status {
			n++
		}
	}
	return n
}
