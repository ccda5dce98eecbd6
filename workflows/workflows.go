// Package workflows runs multi-step work as a DAG of River jobs: a step
// starts when all the steps it comes after have succeeded, reads their
// outputs, and its own completion commits in one transaction with the
// enqueue of the steps it unblocks, so a crash between the two neither loses
// nor duplicates a step. A step that uses up its attempts fails the run and
// cancels what has not started; an operator who retries it brings the run
// back. Runs and steps live in store (workflow_runs, workflow_steps, and
// the edges and counts of unfinished dependencies, workflow_edges and
// workflow_waits). A step's start and completion touch only its own row
// and its dependents' (and a leaf its run's), so a step costs the same in
// a 1000-wide fan-out as in a 10-wide one; transitions.go says how the
// locks are ordered so that none of this deadlocks.
package workflows

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/store"
)

// Runner starts, advances, cancels and repairs workflow runs. It exists
// because step workers are registered before the River client is built, so
// they need somewhere to find the store, and because Start must know which
// job kinds were added as steps. Build one in main and pass it to AddStep,
// Register and the API.
type Runner struct {
	store  *store.Store
	logger *slog.Logger
	// kinds are the step kinds added with AddStep. It is written only while
	// wiring, before any client starts.
	kinds map[string]bool
	// beforeCommit, when set (tests only), runs just before a step's
	// completion transaction commits; an error rolls the whole of it back.
	beforeCommit func(step string) error
	// beforeRunLock, when set (tests only), runs just before a step's
	// success takes its run's row, so a test can hold that row then.
	beforeRunLock func(step string)
	// slots bounds how many steps' starts and ends are in the database at
	// once (see slot); nil on SQLite, whose one connection runs one
	// transaction at a time anyway.
	slots chan struct{}
}

// CutOff is in the error of a step job cancelled because its run had
// failed or been cancelled before the step began: the step never ran, so it
// is not a dead letter (package dlq leaves it out), and retrying the failed
// step that stopped the run brings it back.
const CutOff = store.StepCutOff

// New makes a Runner over a store.
func New(s *store.Store, logger *slog.Logger) *Runner {
	r := &Runner{store: s, logger: logger.With("component", "workflows"), kinds: map[string]bool{}}
	if s.Dialect == store.Postgres {
		r.slots = make(chan struct{}, bookkeepingSlots())
	}
	return r
}

// Def describes one workflow run to start.
type Def struct {
	// Name says which workflow this is; List filters on it.
	Name string
	// Input is marshalled to JSON once and readable by every step.
	Input any
	// Steps in any order; each names the steps it comes after.
	Steps []StepDef
}

// StepDef is one node of the DAG.
type StepDef struct {
	// Name is unique within the run; dependents and Output use it.
	Name string
	// Args are the step job's args. Their kind must have been added with
	// AddStep.
	Args river.JobArgs
	// After lists the steps that must all succeed before this one starts.
	After []string
}

// wireArgs is how a step job's args look in River, whatever their Go type:
// the same JSON as stepArgs[T].
type wireArgs struct {
	RunID string          `json:"run_id"`
	Step  string          `json:"step"`
	Args  json.RawMessage `json:"args"`
}

// Start validates def, records the run and its steps, and enqueues the
// root steps, all in the caller's transaction: nothing exists unless tx
// commits. It returns the new run's id.
func (r *Runner) Start(ctx context.Context, tx *sql.Tx, client *engine.Client, def Def) (string, error) {
	if err := validate(def); err != nil {
		return "", err
	}
	run, err := r.newRun(def)
	if err != nil {
		return "", err
	}
	if err := r.store.InsertWorkflowRun(ctx, tx, run); err != nil {
		return "", err
	}
	if err := r.enqueueReady(ctx, tx, client, run.ID, ""); err != nil {
		return "", err
	}
	r.logger.InfoContext(ctx, "workflow run started", "run_id", run.ID, "workflow", def.Name, "steps", len(def.Steps))
	return run.ID, nil
}

// newRun turns a definition into the rows to insert, with each step's full
// job args so pending steps can be enqueued later without their Go types.
func (r *Runner) newRun(def Def) (store.WorkflowRun, error) {
	input, err := json.Marshal(def.Input)
	if err != nil {
		return store.WorkflowRun{}, fmt.Errorf("workflow %q: input: %w", def.Name, err)
	}
	run := store.WorkflowRun{ID: newRunID(), Name: def.Name, Status: store.WorkflowRunning, Input: input}
	for _, sd := range def.Steps {
		st, err := r.newStep(run.ID, sd)
		if err != nil {
			return store.WorkflowRun{}, fmt.Errorf("workflow %q: %w", def.Name, err)
		}
		run.Steps = append(run.Steps, st)
	}
	return run, nil
}

func (r *Runner) newStep(runID string, sd StepDef) (store.WorkflowStep, error) {
	kind := sd.Args.Kind()
	if !r.kinds[kind] {
		return store.WorkflowStep{}, fmt.Errorf("step %q: job kind %q is not a workflow step (add it with workflows.AddStep)", sd.Name, kind)
	}
	args, err := json.Marshal(sd.Args)
	if err != nil {
		return store.WorkflowStep{}, fmt.Errorf("step %q: args: %w", sd.Name, err)
	}
	wire, err := json.Marshal(wireArgs{RunID: runID, Step: sd.Name, Args: args})
	if err != nil {
		return store.WorkflowStep{}, fmt.Errorf("step %q: args: %w", sd.Name, err)
	}
	return store.WorkflowStep{Name: sd.Name, Kind: kind, Args: wire, Deps: sd.After, Status: store.WorkflowStepPending}, nil
}

// newRunID makes a run id in the app, so Start needs no database round
// trip to learn it and ids look alike on both databases.
func newRunID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return "wf_" + hex.EncodeToString(b)
}

// List lists runs, newest first, without their steps: the CLI's and the
// admin API's overview.
func (r *Runner) List(ctx context.Context, f store.WorkflowFilter) ([]store.WorkflowRun, error) {
	return r.store.ListWorkflowRuns(ctx, f)
}

// Get reads a run with its steps (status, job id, attempts, error, output,
// times), or an error wrapping store.ErrNotFound.
func (r *Runner) Get(ctx context.Context, runID string) (store.WorkflowRun, error) {
	return r.store.GetWorkflowRun(ctx, runID)
}

// ErrFinished is returned when asked to cancel a run that already
// succeeded: there is nothing left to stop.
var ErrFinished = errors.New("workflow run already finished")

// Cancel stops a run for good: the run is cancelled, steps that have not
// started are cancelled with their jobs, and River is asked to cancel the
// jobs of running steps (their workers see their context end). A step that
// still succeeds keeps its output, but nothing after it starts. Cancelling
// a cancelled run does nothing; a failed run can be cancelled, which stops
// an operator's retry from reviving it.
func (r *Runner) Cancel(ctx context.Context, client *engine.Client, runID string) error {
	err := r.store.InTx(ctx, func(tx *sql.Tx) error { return r.cancel(ctx, tx, client, runID) })
	if err == nil {
		r.logger.InfoContext(ctx, "workflow run cancelled", "run_id", runID)
	}
	return err
}

// cancel is Cancel in tx: the run's row first, then what has not started,
// and the jobs' rows last (transitions.go says why that order).
func (r *Runner) cancel(ctx context.Context, tx *sql.Tx, client *engine.Client, runID string) error {
	run, err := r.store.LockWorkflowRun(ctx, tx, runID)
	if err != nil {
		return err
	}
	switch run.Status {
	case store.WorkflowSucceeded:
		return fmt.Errorf("%w: run %s succeeded", ErrFinished, runID)
	case store.WorkflowCancelled:
		return nil
	}
	reason := "cancelled by an operator"
	if run.Error != "" {
		reason = run.Error + "; then " + reason // keep why it failed
	}
	if err := r.setRun(ctx, tx, &run, store.WorkflowCancelled, reason); err != nil {
		return err
	}
	return r.cancelRest(ctx, tx, client, runID, "run cancelled", true)
}
