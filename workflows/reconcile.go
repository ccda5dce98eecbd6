package workflows

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/store"
)

// Reconcile repairs steps that wait on a job that will never report back:
// enqueued or running steps whose job was discarded (a worker killed on its
// last attempt, or one that could not record its failure), cancelled (an
// operator in River UI) or deleted. Each such step fails as a final attempt
// would, failing its run. It returns how many steps it repaired; run it
// often (the workflow_reconcile job kind, on a cron).
func (r *Runner) Reconcile(ctx context.Context, client *engine.Client) (int, error) {
	active, err := r.store.ActiveWorkflowSteps(ctx)
	if err != nil || len(active) == 0 {
		return 0, err
	}
	states, err := jobStates(ctx, client, active)
	if err != nil {
		return 0, err
	}
	repaired := 0
	for _, st := range active {
		state, found := states[st.JobID]
		reason := deadJob(st.JobID, state, found)
		if reason == "" {
			continue
		}
		ok, err := r.repair(ctx, client, st, reason)
		if err != nil {
			return repaired, err
		}
		if ok {
			repaired++
		}
	}
	return repaired, nil
}

// jobStates reads the River state of the steps' jobs, a page at a time.
func jobStates(ctx context.Context, client *engine.Client, steps []store.WorkflowStep) (map[int64]rivertype.JobState, error) {
	const page = 1000
	states := map[int64]rivertype.JobState{}
	for start := 0; start < len(steps); start += page {
		var ids []int64
		for _, st := range steps[start:min(start+page, len(steps))] {
			ids = append(ids, st.JobID)
		}
		res, err := client.JobList(ctx, river.NewJobListParams().IDs(ids...).First(len(ids)))
		if err != nil {
			return nil, fmt.Errorf("reconcile: list step jobs: %w", err)
		}
		for _, job := range res.Jobs {
			states[job.ID] = job.State
		}
	}
	return states, nil
}

// deadJob says why a step's job will never report back, or "" when it may.
func deadJob(id int64, state rivertype.JobState, found bool) string {
	switch {
	case !found:
		return fmt.Sprintf("job %d no longer exists", id)
	case state == rivertype.JobStateDiscarded:
		return fmt.Sprintf("job %d was discarded without recording an outcome", id)
	case state == rivertype.JobStateCancelled:
		return fmt.Sprintf("job %d was cancelled", id)
	default:
		return ""
	}
}

// repair fails one step whose job is dead, if it is still active and still
// waiting on that job once the run and the step are locked.
func (r *Runner) repair(ctx context.Context, client *engine.Client, active store.WorkflowStep, reason string) (bool, error) {
	repaired := false
	err := r.store.InTx(ctx, func(tx *sql.Tx) error {
		run, err := r.store.LockWorkflowRun(ctx, tx, active.RunID)
		if err != nil {
			return err
		}
		// A step whose row another transaction holds is being worked on:
		// leave it to the next sweep rather than wait, which could deadlock
		// with a leaf closing (it holds its step, then waits for the run).
		st, ok, err := r.store.WorkflowStepTx(ctx, tx, active.RunID, active.Name, store.SkipLocked)
		if err != nil || !ok || st.JobID != active.JobID ||
			(st.Status != store.WorkflowStepEnqueued && st.Status != store.WorkflowStepRunning) {
			return err
		}
		repaired = true
		r.logger.WarnContext(ctx, "workflow step's job is dead", "run_id", run.ID, "step", st.Name, "job_id", st.JobID, "reason", reason)
		return r.record(ctx, tx, client, &run, st.Name, onError(run.Status, true, false), reason)
	})
	return repaired, err
}

// ReconcileArgs are the args of the workflow_reconcile job, which runs
// Reconcile. Put it on a cron (every minute is cheap: it reads only active
// steps).
type ReconcileArgs struct{}

// Kind is stable: it is stored with every job.
func (ReconcileArgs) Kind() string { return "workflow_reconcile" }

// ReconcileSpec runs the sweep on the maintenance queue, away from real work.
var ReconcileSpec = engine.Spec{Queue: "maintenance", MaxAttempts: 3, Timeout: 5 * time.Minute}

// reconcileWorker works workflow_reconcile jobs.
type reconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	r *Runner
}

// Work runs one sweep with the client working the job.
func (w *reconcileWorker) Work(ctx context.Context, job *river.Job[ReconcileArgs]) error {
	n, err := w.r.Reconcile(ctx, river.ClientFromContext[*sql.Tx](ctx))
	if n > 0 {
		w.r.logger.InfoContext(ctx, "workflow reconcile repaired steps", "repaired", n, "job_id", job.ID)
	}
	return err
}
