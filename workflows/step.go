package workflows

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
)

// StepFunc does one step's work. It runs outside any transaction and may be
// run again (River retries it), so it should do its side effects through
// Result.Apply or make them idempotent.
type StepFunc[T river.JobArgs] func(ctx context.Context, step *Step[T]) (Result, error)

// Result is what a step hands back.
type Result struct {
	// Output is marshalled to JSON and stored; dependents read it with
	// Step.Output.
	Output any
	// Apply, when set, makes the step's domain writes in the same
	// transaction that records its success, completes its job and enqueues
	// its dependents: all of it commits or none does. Touch the database
	// only through tx (on SQLite it is the only connection).
	Apply func(ctx context.Context, tx *sql.Tx) error
}

// Step is a step function's view of its run: its own args and what the run
// and its dependencies provide.
type Step[T river.JobArgs] struct {
	// Args are the step's own args from the definition.
	Args T
	// RunID and Name identify the step.
	RunID string
	Name  string
	// Attempt is River's attempt number for this job, from 1.
	Attempt int
	// Job is the step's River job, for what needs it: its id in call
	// records, llm.JobResult's mapping of LLM errors to snoozes and cancels.
	Job *rivertype.JobRow

	snap snapshot
}

// Input decodes the run's input into v.
func (s *Step[T]) Input(v any) error {
	if err := json.Unmarshal(s.snap.input, v); err != nil {
		return fmt.Errorf("workflows: run %s input: %w", s.RunID, err)
	}
	return nil
}

// Deps lists the steps this one comes after.
func (s *Step[T]) Deps() []string { return slices.Clone(s.snap.deps) }

// Output decodes the stored output of dep into v. dep must be one of the
// steps this one comes after: only those are sure to have finished.
func (s *Step[T]) Output(dep string, v any) error {
	if !slices.Contains(s.snap.deps, dep) {
		return fmt.Errorf("workflows: step %q does not come after %q, so cannot read its output", s.Name, dep)
	}
	out, ok := s.snap.outputs[dep]
	if !ok {
		return fmt.Errorf("workflows: step %q has no stored output", dep)
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("workflows: output of step %q: %w", dep, err)
	}
	return nil
}

// stepArgs are a step job's args on the wire: which run and step, and the
// step's own args. Its kind is T's, so engine.Add's kind check holds and
// River UI shows the step's kind.
type stepArgs[T river.JobArgs] struct {
	RunID string `json:"run_id"`
	Step  string `json:"step"`
	Args  T      `json:"args"`
}

// Kind is T's kind. T must have a value receiver for Kind.
func (a stepArgs[T]) Kind() string { return a.Args.Kind() }

// AddStep registers a step kind: fn does the work, spec says the queue,
// attempts, backoff and timeout of its jobs. A kind added here is worked
// only as a workflow step; it panics like engine.Add on a wiring mistake.
func AddStep[T river.JobArgs](reg *engine.Registry, r *Runner, spec engine.Spec, fn StepFunc[T]) {
	engine.Add(reg, spec, &stepWorker[T]{r: r, fn: fn})
	var args T
	r.kinds[args.Kind()] = true
}

// stepWorker is the River worker of one step kind. It holds only what needs
// T; the bookkeeping is the Runner's.
type stepWorker[T river.JobArgs] struct {
	river.WorkerDefaults[stepArgs[T]]
	r  *Runner
	fn StepFunc[T]
}

// Work begins the attempt, runs the step and records how it ended.
func (w *stepWorker[T]) Work(ctx context.Context, job *river.Job[stepArgs[T]]) error {
	a := attempt{runID: job.Args.RunID, step: job.Args.Step, job: job.JobRow}
	snap, err := w.r.begin(ctx, a)
	if snap == nil {
		return err
	}
	step := &Step[T]{Args: job.Args.Args, RunID: a.runID, Name: a.step, Attempt: job.Attempt, Job: job.JobRow, snap: *snap}
	res, err := w.r.call(ctx, a, func() (Result, error) { return w.fn(ctx, step) })
	return w.r.end(ctx, a, snap.replay, res, err)
}
