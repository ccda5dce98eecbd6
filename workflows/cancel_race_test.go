package workflows_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/workflows"
)

// TestCancelDuringSuccess cancels a run while a step's success is under
// way, at the worst moment on Postgres: the cancel holds the run's row (its
// first lock) when the success comes to take it, and only then cancels the
// step's running job. With every transaction taking the job's row last,
// both finish: the run is cancelled, the step keeps its output and its job
// completes. A success that held its job's row by then deadlocked with the
// cancel. Two ways a success takes the run's row: a leaf of a running run
// closes its leaf, and an operator's retry in a failed run locks the run it
// might revive.
func TestCancelDuringSuccess(t *testing.T) {
	a := workflows.StepDef{Name: "a", Args: calcArgs{Value: 1}}
	for _, tc := range []struct {
		name string
		def  workflows.Def
		// failFirst: a fails for good first, failing the run, and the
		// operator retries it.
		failFirst bool
	}{
		{"leaf", workflows.Def{Name: "leaf", Steps: []workflows.StepDef{a}}, false},
		{"retry", workflows.Def{Name: "retry", Steps: []workflows.StepDef{a,
			{Name: "b", Args: calcArgs{Value: 2}, After: []string{"a"}}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, s *store.Store) { cancelDuringSuccess(t, s, tc.def, tc.failFirst) })
		})
	}
}

func cancelDuringSuccess(t *testing.T, s *store.Store, def workflows.Def, failFirst bool) {
	ctx := testwait.Context(t)
	var healed atomic.Bool
	healed.Store(!failFirst)
	reached, release := make(chan struct{}), make(chan struct{})
	e := newEnv(t, s, func(_ context.Context, step *workflows.Step[calcArgs]) (workflows.Result, error) {
		if step.Name != "a" {
			return sum(step)
		}
		if !healed.Load() {
			return workflows.Result{}, fmt.Errorf("boom on attempt %d", step.Attempt)
		}
		close(reached)
		// The cancel asks River to end this job's context; a step whose
		// work is done by then returns its result all the same.
		select {
		case <-release:
			return sum(step)
		case <-ctx.Done():
			return workflows.Result{}, ctx.Err()
		}
	}, true)
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // before the client stops: a failed test must not hang it
	locking := make(chan struct{})
	var lockingOnce sync.Once
	e.r.SetBeforeRunLock(func(step string) {
		if step == "a" {
			lockingOnce.Do(func() { close(locking) })
		}
	})

	id := e.start(t, def)
	if failFirst {
		_, steps := e.waitRun(t, id, store.WorkflowFailed)
		e.waitJob(t, steps["a"].JobID, rivertype.JobStateDiscarded)
		healed.Store(true)
		if _, err := e.client.JobRetry(ctx, steps["a"].JobID); err != nil {
			t.Fatal(err)
		}
	}
	waitClosed(t, reached, "step a never started")
	_, steps := e.get(t, id)
	a := steps["a"]

	if s.Dialect == store.Postgres {
		tx, err := s.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := s.LockWorkflowRun(ctx, tx, id); err != nil { // Cancel's first lock
			t.Fatal(err)
		}
		free()
		waitClosed(t, locking, "step a's success never came to its run's row")
		if err := e.r.CancelTx(ctx, tx, e.client, id); err != nil {
			t.Fatalf("cancel while a's success waits for the run's row: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	} else {
		// SQLite runs one transaction at a time: the cancel commits first.
		if err := e.r.Cancel(ctx, e.client, id); err != nil {
			t.Fatal(err)
		}
		free()
	}

	ev := enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
		return ev.Job.ID == a.JobID && ev.Job.Attempt == a.Attempts
	})
	run, steps := e.get(t, id)
	if ev.Job.State != rivertype.JobStateCompleted || steps["a"].Status != store.WorkflowStepSucceeded {
		t.Fatalf("a's job ended %s, step a %s (%q): its success must survive the cancel",
			ev.Job.State, steps["a"].Status, steps["a"].Error)
	}
	wantErr := "cancelled by an operator"
	if failFirst {
		wantErr = "step a: boom on attempt 2; then " + wantErr
	}
	if run.Status != store.WorkflowCancelled || run.Error != wantErr || output(t, steps["a"]) != 1 {
		t.Fatalf("run %s (%q), a's output %s; want cancelled (%q), 1", run.Status, run.Error, steps["a"].Output, wantErr)
	}
	if b, ok := steps["b"]; ok && (b.Status != store.WorkflowStepCancelled || b.JobID != 0) {
		t.Fatalf("step b = %+v; want cancelled, never enqueued: a cancelled run is not revived", b)
	}
}

// waitClosed waits for ch to close, as long as the test's deadline allows.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-testwait.After(t):
		t.Fatal(what)
	}
}
