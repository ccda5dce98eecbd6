package benchdecide

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/workflows"
)

// Service is what the step needs of the benchmark service
// (benches.Service), declared here where it is used.
type Service interface {
	DecideTx(ctx context.Context, tx *sql.Tx, run string, now time.Time) (bench.Decision, error)
}

// Spec: the default queue (no LLM call: it reads cells and decides in
// code); a failed attempt is a database error, retried soon.
var Spec = engine.Spec{Queue: "default", MaxAttempts: 5, Backoff: 10 * time.Second, Timeout: time.Minute}

// Output is the step's stored output: which run it decided (the decision
// itself is the run's, read from the service).
type Output struct {
	Run string `json:"run"`
}

// Worker works bench_decide steps.
type Worker struct {
	Service Service
	Logger  *slog.Logger
	// Now is the clock; defaults to time.Now.
	Now func() time.Time
}

// Register adds the bench_decide step kind.
func Register(reg *engine.Registry, r *workflows.Runner, w *Worker) {
	workflows.AddStep(reg, r, Spec, w.Step)
}

// Step decides the run in the transaction that completes the step: every
// cell has been recorded by then (the step comes after all of them), and
// a replay returns the stored decision rather than deciding twice.
func (w *Worker) Step(ctx context.Context, step *workflows.Step[Args]) (workflows.Result, error) {
	run := step.Args.Run
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	return workflows.Result{
		Output: Output{Run: run},
		Apply: func(ctx context.Context, tx *sql.Tx) error {
			d, err := w.Service.DecideTx(ctx, tx, run, now().UTC())
			if err != nil {
				return err
			}
			if w.Logger != nil {
				w.Logger.Info("bench run decided", "run", run, "status", d.Status, "reasons", d.Reasons)
			}
			return nil
		},
	}, nil
}
