package workflows

import (
	"context"
	"errors"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/store"
)

// The decisions of a step's life, kept pure so their cases are tested as
// tables.

// startAction is what begin does with an attempt.
type startAction int

const (
	startWork     startAction = iota // run the step
	startComplete                    // already succeeded: complete the job, run nothing
	startCancel                      // run is over: cancel the step and its job
	startStale                       // another job works this step now: cancel this job only
)

// decideStart says what to do with an attempt from the run's status and
// the step's row.
func decideStart(runStatus string, st store.WorkflowStep, jobID int64) startAction {
	switch {
	case st.Status == store.WorkflowStepSucceeded:
		return startComplete
	case st.JobID != jobID:
		return startStale
	case runStatus == store.WorkflowCancelled:
		return startCancel
	case runStatus == store.WorkflowFailed && st.Status == store.WorkflowStepCancelled:
		return startCancel
	default:
		return startWork
	}
}

// outcome is what a failed attempt does to its step and run.
type outcome struct {
	step      string // the step's new status
	failRun   bool   // fail the run and cancel what has not started
	cancelJob bool   // return JobCancel: River must not retry
}

// onError decides the outcome of a failed attempt. final: no attempt is
// left, or the job was cancelled (JobCancel, or remotely). replay: the run
// had failed before this attempt began (an operator retried it).
//
//	run cancelled                      → step cancelled, no retry
//	final                              → step failed; a running run fails
//	run running, or a replay           → step enqueued, River retries
//	run failed while this attempt ran  → step cancelled, no retry (a
//	                                     revived run enqueues it again)
func onError(runStatus string, final, replay bool) outcome {
	switch {
	case runStatus == store.WorkflowCancelled:
		return outcome{step: store.WorkflowStepCancelled, cancelJob: true}
	case final:
		return outcome{step: store.WorkflowStepFailed, failRun: runStatus == store.WorkflowRunning}
	case runStatus == store.WorkflowRunning || replay:
		return outcome{step: store.WorkflowStepEnqueued}
	default:
		return outcome{step: store.WorkflowStepCancelled, cancelJob: true}
	}
}

// isFinal says whether River will not retry this error. A snooze never is:
// it does not use up an attempt.
func isFinal(ctx context.Context, job *rivertype.JobRow, err error) bool {
	var snooze *river.JobSnoozeError
	if errors.As(err, &snooze) {
		return false
	}
	var cancel *river.JobCancelError
	return job.Attempt >= job.MaxAttempts || errors.As(err, &cancel) ||
		errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely)
}

// reasonText is the error as operators should read it.
func reasonText(ctx context.Context, err error) string {
	if errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely) {
		return "job cancelled: " + err.Error()
	}
	var cancel *river.JobCancelError
	if errors.As(err, &cancel) && cancel.Unwrap() != nil {
		return cancel.Unwrap().Error()
	}
	return err.Error()
}
