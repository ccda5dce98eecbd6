package workflows

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/store"
)

// bookkeepingTimeout bounds the transactions that record how an attempt
// ended. They run on a context detached from the job's, because that one
// may already be over (timeout, cancellation) exactly when the outcome
// most needs recording.
const bookkeepingTimeout = 30 * time.Second

// attempt is one attempt of a step's job, without the step's Go type.
type attempt struct {
	runID, step string
	job         *rivertype.JobRow
}

// complete completes the attempt's job in tx, with the results it commits
// with (store.CompleteJobTx says why not river.JobCompleteTx).
func (r *Runner) complete(ctx context.Context, tx *sql.Tx, a attempt) error {
	return r.store.CompleteJobTx(ctx, tx, a.job.ID)
}

// snapshot is what a step reads, taken when its attempt begins.
type snapshot struct {
	input   json.RawMessage
	deps    []string
	outputs map[string]json.RawMessage
	// replay is set when the run had failed before this attempt began: an
	// operator retried the job.
	replay bool
}

// begin marks the step running and takes its snapshot, holding the step's
// row so a failing sibling either sees this step running or has cancelled
// it. A nil snapshot means the step must not run; Work returns err as is
// (nil, or a JobCancel).
func (r *Runner) begin(ctx context.Context, a attempt) (*snapshot, error) {
	release, err := r.slot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	// The common case is one statement, its own transaction; anything
	// unusual is decided in one from the step's row, held, and the run's.
	start, ok, err := r.store.TryStartWorkflowStep(ctx, r.store.DB, a.runID, a.step, a.job.ID, a.job.Attempt)
	if err != nil {
		return nil, err
	}
	if ok {
		return newSnapshot(start), nil
	}
	var snap *snapshot
	var stop error
	err = r.store.InTx(ctx, func(tx *sql.Tx) error {
		var err error
		snap, stop, err = r.beginTx(ctx, tx, a)
		return err
	})
	if err != nil {
		return nil, err
	}
	return snap, stop
}

// beginTx returns the snapshot of a step to run, or the error that stops
// the job instead, or a database error.
func (r *Runner) beginTx(ctx context.Context, tx *sql.Tx, a attempt) (*snapshot, error, error) {
	st, ok, err := r.store.WorkflowStepTx(ctx, tx, a.runID, a.step, store.Lock)
	if err != nil {
		return nil, nil, err
	}
	// The run is read after the step's row is held: a cancellation that
	// reached this step first is then seen.
	run, err := r.store.ReadWorkflowRun(ctx, tx, a.runID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, river.JobCancel(err), nil
	}
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, river.JobCancel(fmt.Errorf("workflow run %s has no step %q", a.runID, a.step)), nil
	}
	switch decideStart(run.Status, st, a.job.ID) {
	case startComplete:
		return nil, nil, r.complete(ctx, tx, a)
	case startStale:
		return nil, river.JobCancel(fmt.Errorf("step %q of %s is worked by job %d now", a.step, a.runID, st.JobID)), nil
	case startCancel:
		stop := river.JobCancel(fmt.Errorf("%sworkflow run %s is %s", CutOff, a.runID, run.Status))
		if st.Status == store.WorkflowStepCancelled {
			return nil, stop, nil
		}
		return nil, stop, r.store.FinishWorkflowStep(ctx, tx, a.runID, a.step, store.WorkflowStepCancelled, "run "+run.Status)
	}
	if err := r.store.StartWorkflowStep(ctx, tx, a.runID, a.step, a.job.Attempt); err != nil {
		return nil, nil, err
	}
	outputs, err := r.store.WorkflowStepOutputs(ctx, tx, a.runID, st.Deps)
	if err != nil {
		return nil, nil, err
	}
	return newSnapshot(store.StepStart{Deps: st.Deps, Input: run.Input, RunStatus: run.Status, Outputs: outputs}), nil, nil
}

// newSnapshot is what a started step reads; an attempt that begins in a
// failed run is an operator's retry.
func newSnapshot(start store.StepStart) *snapshot {
	return &snapshot{input: start.Input, deps: start.Deps, outputs: start.Outputs, replay: start.RunStatus == store.WorkflowFailed}
}

// call runs the step function, turning a panic into an error so the
// attempt is still recorded.
func (r *Runner) call(ctx context.Context, a attempt, fn func() (Result, error)) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.logger.ErrorContext(ctx, "workflow step panicked", "run_id", a.runID, "step", a.step, "job_id", a.job.ID, "panic", p)
			err = fmt.Errorf("step panicked: %v", p)
		}
	}()
	return fn()
}

// end records how an attempt ended and returns what Work must return.
func (r *Runner) end(ctx context.Context, a attempt, replay bool, res Result, err error) error {
	bk, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	release, slotErr := r.slot(bk)
	if slotErr != nil {
		// Nothing recorded, as when the bookkeeping fails: River retries.
		r.logger.ErrorContext(bk, "workflow step: recording its end", "run_id", a.runID, "step", a.step,
			"job_id", a.job.ID, "error", slotErr)
		return cmp.Or(err, slotErr)
	}
	defer release()
	if err == nil {
		err = r.succeed(bk, a, res)
	}
	if err == nil {
		return nil
	}
	return r.fail(ctx, bk, a, replay, err)
}

// succeed records the step's output, applies its writes, moves the run on
// and completes the job: one transaction, which holds the step's row. The
// job's row is taken last, after the run's (a leaf closing, a success in a
// run that is not running): Cancel holds the run's row when it cancels
// running steps' jobs, so a success holding its job while it waited for
// the run would deadlock with it.
func (r *Runner) succeed(ctx context.Context, a attempt, res Result) error {
	output, err := json.Marshal(res.Output)
	if err != nil {
		return fmt.Errorf("marshal output: %w", err)
	}
	client := river.ClientFromContext[*sql.Tx](ctx)
	return r.store.InTx(ctx, func(tx *sql.Tx) error {
		status, ok, err := r.store.SucceedWorkflowStep(ctx, tx, a.runID, a.step, output)
		if err != nil {
			return err
		}
		if !ok {
			return r.complete(ctx, tx, a)
		}
		if res.Apply != nil {
			if err := res.Apply(ctx, tx); err != nil {
				return fmt.Errorf("apply: %w", err)
			}
		}
		// Late, so the dependents' rows, which the steps they come after
		// all take, are held only until the commit that follows.
		if err := r.advance(ctx, tx, client, a.runID, status, a.step); err != nil {
			return err
		}
		if err := r.complete(ctx, tx, a); err != nil {
			return err
		}
		if r.beforeCommit != nil {
			return r.beforeCommit(a.step)
		}
		return nil
	})
}

// fail records a failed attempt as onError decides and returns the error
// River should see. jobCtx is the job's own context (its cause tells a
// remote cancellation); bk is the detached bookkeeping context.
func (r *Runner) fail(jobCtx, bk context.Context, a attempt, replay bool, stepErr error) error {
	final, reason, ret := isFinal(jobCtx, a.job, stepErr), reasonText(jobCtx, stepErr), stepErr
	client := river.ClientFromContext[*sql.Tx](bk)
	txErr := r.store.InTx(bk, func(tx *sql.Tx) error {
		// A stale job (another works its step now) or a step that has
		// succeeded records nothing and locks nothing; otherwise the run's
		// lock comes first, as in every move of a whole run.
		if mine, err := r.holds(bk, tx, a, store.NoLock); err != nil || !mine {
			return err
		}
		run, err := r.store.LockWorkflowRun(bk, tx, a.runID)
		if err != nil {
			return err
		}
		if mine, err := r.holds(bk, tx, a, store.Lock); err != nil || !mine {
			return err
		}
		out := onError(run.Status, final, replay)
		if out.cancelJob {
			ret = noRetry(stepErr)
		}
		return r.record(bk, tx, client, &run, a.step, out, reason)
	})
	if txErr != nil {
		// Nothing was recorded, so let River treat the error as it would:
		// a retry records it next time, and a last attempt's dead job is
		// found by Reconcile, which fails the run.
		r.logger.ErrorContext(bk, "workflow step: recording failure", "run_id", a.runID, "step", a.step,
			"job_id", a.job.ID, "error", txErr)
		return stepErr
	}
	return ret
}

// holds says whether the attempt's job still works its step, one that has
// not succeeded: only then is its failure recorded.
func (r *Runner) holds(ctx context.Context, tx *sql.Tx, a attempt, lock store.RowLock) (bool, error) {
	st, ok, err := r.store.WorkflowStepTx(ctx, tx, a.runID, a.step, lock)
	return ok && st.Status != store.WorkflowStepSucceeded && st.JobID == a.job.ID, err
}

// noRetry wraps err in JobCancel unless it already is one.
func noRetry(err error) error {
	var cancel *river.JobCancelError
	if errors.As(err, &cancel) {
		return err
	}
	return river.JobCancel(err)
}
