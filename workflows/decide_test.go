package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/store"
)

func TestDecideStart(t *testing.T) {
	const job = 7
	step := func(status string, jobID int64) store.WorkflowStep {
		return store.WorkflowStep{Name: "s", Status: status, JobID: jobID}
	}
	tests := []struct {
		name string
		run  string
		step store.WorkflowStep
		want startAction
	}{
		{"first attempt", store.WorkflowRunning, step(store.WorkflowStepEnqueued, job), startWork},
		{"retry after a crash mid-attempt", store.WorkflowRunning, step(store.WorkflowStepRunning, job), startWork},
		{"already succeeded: operator retried a completed job", store.WorkflowSucceeded, step(store.WorkflowStepSucceeded, job), startComplete},
		{"already succeeded beats a stale job", store.WorkflowRunning, step(store.WorkflowStepSucceeded, 9), startComplete},
		{"old job of a re-enqueued step", store.WorkflowRunning, step(store.WorkflowStepEnqueued, 9), startStale},
		{"run cancelled", store.WorkflowCancelled, step(store.WorkflowStepEnqueued, job), startCancel},
		{"replay of the failed step", store.WorkflowFailed, step(store.WorkflowStepFailed, job), startWork},
		{"cancelled step of a failed run", store.WorkflowFailed, step(store.WorkflowStepCancelled, job), startCancel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideStart(tt.run, tt.step, job); got != tt.want {
				t.Fatalf("decideStart = %d; want %d", got, tt.want)
			}
		})
	}
}

func TestOnError(t *testing.T) {
	tests := []struct {
		name          string
		run           string
		final, replay bool
		want          outcome
	}{
		{"retryable in a running run", store.WorkflowRunning, false, false, outcome{step: store.WorkflowStepEnqueued}},
		{"last attempt fails the run", store.WorkflowRunning, true, false, outcome{step: store.WorkflowStepFailed, failRun: true}},
		{"second failure in a failed run", store.WorkflowFailed, true, false, outcome{step: store.WorkflowStepFailed}},
		{"replay keeps retrying", store.WorkflowFailed, false, true, outcome{step: store.WorkflowStepEnqueued}},
		{"replay's last attempt", store.WorkflowFailed, true, true, outcome{step: store.WorkflowStepFailed}},
		{"sibling failed the run meanwhile", store.WorkflowFailed, false, false,
			outcome{step: store.WorkflowStepCancelled, cancelJob: true}},
		{"run cancelled", store.WorkflowCancelled, false, false, outcome{step: store.WorkflowStepCancelled, cancelJob: true}},
		{"run cancelled, last attempt", store.WorkflowCancelled, true, false, outcome{step: store.WorkflowStepCancelled, cancelJob: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := onError(tt.run, tt.final, tt.replay); got != tt.want {
				t.Fatalf("onError = %+v; want %+v", got, tt.want)
			}
		})
	}
}

func TestIsFinalAndReason(t *testing.T) {
	boom := errors.New("boom")
	remote, cancel := context.WithCancelCause(context.Background())
	cancel(river.ErrJobCancelledRemotely)
	job := func(attempt, max int) *rivertype.JobRow { return &rivertype.JobRow{Attempt: attempt, MaxAttempts: max} }
	tests := []struct {
		name   string
		ctx    context.Context
		job    *rivertype.JobRow
		err    error
		final  bool
		reason string
	}{
		{"attempts left", context.Background(), job(1, 3), boom, false, "boom"},
		{"last attempt", context.Background(), job(3, 3), boom, true, "boom"},
		{"operator added an attempt", context.Background(), job(4, 4), boom, true, "boom"},
		{"JobCancel", context.Background(), job(1, 3), river.JobCancel(boom), true, "boom"},
		{"snooze on the last attempt", context.Background(), job(3, 3), river.JobSnooze(0), false, ""},
		{"cancelled remotely", remote, job(1, 3), context.Canceled, true, "job cancelled: context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isFinal(tt.ctx, tt.job, tt.err); got != tt.final {
				t.Fatalf("isFinal = %v; want %v", got, tt.final)
			}
			if tt.reason != "" && reasonText(tt.ctx, tt.err) != tt.reason {
				t.Fatalf("reasonText = %q; want %q", reasonText(tt.ctx, tt.err), tt.reason)
			}
		})
	}
}

func TestDeadJob(t *testing.T) {
	for state, dead := range map[rivertype.JobState]bool{
		rivertype.JobStateAvailable: false, rivertype.JobStateRunning: false, rivertype.JobStateRetryable: false,
		rivertype.JobStateScheduled: false, rivertype.JobStateCompleted: false,
		rivertype.JobStateDiscarded: true, rivertype.JobStateCancelled: true,
	} {
		if got := deadJob(5, state, true) != ""; got != dead {
			t.Errorf("deadJob(%s) dead = %v; want %v", state, got, dead)
		}
	}
	if got := deadJob(5, "", false); !strings.Contains(got, "job 5 no longer exists") {
		t.Errorf("deadJob(missing) = %q", got)
	}
}
