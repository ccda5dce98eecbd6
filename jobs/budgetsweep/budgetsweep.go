// Package budgetsweep releases budget reservations whose process died
// before settling them, so a crash cannot hold a day's budget hostage.
package budgetsweep

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/engine"
)

// Args: none.
type Args struct{}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "budget_sweep" }

// Spec: maintenance work, retried quickly.
var Spec = engine.Spec{Kind: "budget_sweep", Queue: "maintenance", MaxAttempts: 3, Backoff: 10 * time.Second, Timeout: time.Minute}

// Worker releases expired reservations.
type Worker struct {
	river.WorkerDefaults[Args]
	Ledger *budget.Ledger
	Logger *slog.Logger
}

// Work releases what expired.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	n, err := w.Ledger.ReleaseExpired(ctx)
	if n > 0 {
		w.Logger.Warn("released budget reservations that were never settled", "count", n)
	}
	return err
}
