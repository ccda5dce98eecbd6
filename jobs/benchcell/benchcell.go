package benchcell

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// FailpointJudged is the cell's failpoint (store.SetFailpoint; tests
// only, e.g. MULL_TEST_FAILPOINT in cmd/mull's kill tests): reached once
// the judge answered, before the completing transaction begins. A process
// killed there has paid for both calls and stored nothing of the cell:
// the retry scores it again, and it is recorded once.
const FailpointJudged = "bench_cell.judged"

// Service is what a cell needs of the benchmark service (benches.Service):
// what to run, and where to record it. Declared here, where it is used, so
// the worker's tests can stand in for it.
type Service interface {
	CellInput(ctx context.Context, run, caseID string, side bench.Side) (benches.CellInput, error)
	RecordCellTx(ctx context.Context, tx *sql.Tx, c bench.Cell) (bool, error)
	NoteCellJob(ctx context.Context, run string, job int64) error
}

// Spec: the llm queue (the executor and the judge call DeepSeek, and a
// cell waits with the other LLM jobs when the queue pauses); 3 attempts
// 10s apart (short: a cell's whole run is waiting on it);
// the timeout fits both phases (2 × bench.phase_timeout) with room to
// record. SpecFor sizes it from config.
var Spec = SpecFor(config.Config{}.WithDefaults().Bench)

// SpecFor is Spec sized for cfg: the timeout covers both phases, plus
// bench.dsh_timeout when DSH runs the executor.
func SpecFor(cfg config.Bench) engine.Spec {
	timeout := 2*cfg.PhaseTimeout.D() + time.Minute
	if cfg.Executor == config.BenchExecutorDSH {
		timeout += cfg.DSHTimeout.D()
	}
	return engine.Spec{Queue: "llm", LLM: true, MaxAttempts: 3, Backoff: 10 * time.Second, Timeout: timeout}
}

// Output is the step's stored output.
type Output struct {
	Status bench.CellStatus `json:"status"`
	Score  *float64         `json:"score"`
}

// Worker works bench_cell steps.
type Worker struct {
	Service  Service
	LLM      *llm.Client
	Executor Executor
	// Config is bench.*: the phases' timeout and token cap.
	Config config.Bench
	Logger *slog.Logger
	// Now is the clock; defaults to time.Now.
	Now func() time.Time
}

// Register adds the bench_cell step kind, its spec sized for w.Config.
func Register(reg *engine.Registry, r *workflows.Runner, w *Worker) {
	workflows.AddStep(reg, r, SpecFor(w.Config), w.Step)
}

// Step scores one cell: the executor on the side's snapshot, then the
// judge, and records the cell in the step's completing transaction (a
// cell is scored once, whatever the retries). An attempt that fails is
// retried while attempts remain; the last one records the cell failed,
// score null, and succeeds, so the run's decision still runs. A budget
// wait or a paused queue snoozes without burning an attempt; a permanent
// LLM error records the cell failed at once.
func (w *Worker) Step(ctx context.Context, step *workflows.Step[Args]) (workflows.Result, error) {
	a := step.Args
	in, err := w.Service.CellInput(ctx, a.Run, a.Case, a.Side)
	if errors.Is(err, benches.ErrNotFound) {
		return workflows.Result{}, river.JobCancel(fmt.Errorf("bench_cell %s/%s/%s/%d: %w", a.Run, a.Case, a.Side, a.Iteration, err))
	}
	if err != nil {
		return workflows.Result{}, err
	}
	// Noted before any LLM call, so the run's progress counts this job's.
	if err := w.Service.NoteCellJob(ctx, a.Run, step.Job.ID); err != nil {
		return workflows.Result{}, err
	}
	start := w.now()
	cell := bench.Cell{RunID: a.Run, Side: a.Side, CaseID: a.Case, Iteration: a.Iteration,
		SnapshotID: in.Snapshot.ID, StateHash: in.Snapshot.StateHash, CaseHash: in.Case.Hash}
	out, verdict, err := w.score(ctx, step, in)
	if err != nil {
		if ret := w.retry(ctx, step, err); ret != nil {
			return workflows.Result{}, ret
		}
		cell.Status, cell.FailureReason, cell.Detail = bench.CellFailed, reasonOf(err), detail(err)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cell.FailureReason = bench.Timeout // whatever the phase made of it
		}
		w.logger().Warn("bench cell failed", "run", a.Run, "case", a.Case, "side", a.Side, "iteration", a.Iteration,
			"attempt", step.Attempt, "reason", cell.FailureReason, "error", err)
	} else {
		store.Failpoint(FailpointJudged)
		score := verdict.Score
		cell.Status, cell.Score, cell.Feedback = bench.CellOK, &score, verdict.Feedback
	}
	if out != nil {
		cell.Evidence, cell.Log = &out.Evidence, out.Log
	}
	cell.DurationMS = w.now().Sub(start).Milliseconds()
	cell.RecordedAt = w.now().UTC()
	cell = gate(cell)
	return workflows.Result{
		Output: Output{Status: cell.Status, Score: cell.Score},
		Apply: func(ctx context.Context, tx *sql.Tx) error {
			_, err := w.Service.RecordCellTx(ctx, tx, cell)
			return err
		},
	}, nil
}

// score runs both phases. It returns the executor's outcome whenever the
// executor phase succeeded, so a cell whose judge failed keeps its
// evidence.
func (w *Worker) score(ctx context.Context, step *workflows.Step[Args], in benches.CellInput) (*Outcome, bench.Verdict, error) {
	a := step.Args
	job := Input{CellInput: in, Side: a.Side, Iteration: a.Iteration, JobID: step.Job.ID, Kind: step.Job.Kind, Attempt: step.Job.Attempt}
	if step.Job.AttemptedAt != nil {
		job.AttemptedAt = *step.Job.AttemptedAt
	}
	out, err := w.Executor.Execute(ctx, job)
	if err != nil {
		return nil, bench.Verdict{}, err
	}
	v, err := Judge(ctx, w.LLM, w.Config, w.call(step, in), in.Case, out.Evidence)
	return &out, v, err
}

// call is the base of the step's LLM calls: its kind, job and the run's
// workspace, so every cell charges the run's budget key.
func (w *Worker) call(step *workflows.Step[Args], in benches.CellInput) llm.Call {
	return llm.Call{Kind: step.Job.Kind, JobID: step.Job.ID, Workspace: in.Run.Workspace}
}

// retry says what River must do with a failed attempt: the error to
// return (a snooze, a retry), or nil when the cell is to be recorded
// failed now (a permanent error, or the last attempt's).
func (w *Worker) retry(ctx context.Context, step *workflows.Step[Args], err error) error {
	if ctx.Err() != nil {
		// The job itself was stopped. Its timeout is retried, and on the
		// last attempt it is the cell's failure (timeout), so the run is
		// still decided; a cancel (a shutdown, River's remote cancel) is
		// not the cell's doing: River decides.
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && step.Job.Attempt >= step.Job.MaxAttempts {
			return nil
		}
		return err
	}
	ret := llm.JobResult(ctx, w.logger(), step.Job, err)
	var snooze *river.JobSnoozeError
	var cancel *river.JobCancelError
	switch {
	case errors.As(ret, &snooze):
		return ret // budget, pause, Retry-After: no attempt burnt
	case errors.As(ret, &cancel):
		return nil // permanent: retrying cannot help
	case step.Job.Attempt >= step.Job.MaxAttempts:
		return nil // the last attempt: the cell fails, the run goes on
	}
	return ret
}

// reasonOf is the failure reason of a cell that failed with err.
func reasonOf(err error) bench.FailureReason {
	var f *Failure
	var le *llm.Error
	switch {
	case bench.FailureOf(err) != "":
		return bench.FailureOf(err)
	case errors.As(err, &f):
		return f.Reason
	case errors.As(err, &le) && le.Reason == "timeout", errors.Is(err, context.DeadlineExceeded):
		return bench.Timeout
	case errors.Is(err, context.Canceled):
		return bench.Aborted
	}
	return bench.ProviderError
}

// Failure is an executor's own failure (not the LLM client's): the DSH
// executor's start failures, timeouts and missing logs.
type Failure struct {
	Reason bench.FailureReason
	Err    error
}

func (f *Failure) Error() string { return string(f.Reason) + ": " + f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// detail is err's text for people, capped.
func detail(err error) string {
	s := err.Error()
	if r := []rune(s); len(r) > 1000 {
		s = string(r[:1000]) + "…"
	}
	return s
}

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Worker) logger() *slog.Logger {
	if w.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Logger
}

// Outcome is what an executor reports: the evidence the judge reads, and
// for the DSH executor the session log (a JSON array of its rows).
type Outcome struct {
	Evidence bench.Evidence
	Log      json.RawMessage
}
