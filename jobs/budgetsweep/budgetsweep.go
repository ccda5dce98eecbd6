// Package budgetsweep cleans up after processes that died mid-call: it
// releases budget reservations they never settled, so a crash cannot hold a
// day's budget hostage, and marks the call records they left running as
// lost, so operators see calls DeepSeek may have billed. It also forgets
// the request messages of calls older than llm.keep_prompts.
package budgetsweep

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/store"
)

// Args: none.
type Args struct{}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "budget_sweep" }

// Spec: maintenance work, retried quickly.
var Spec = engine.Spec{Queue: "maintenance", MaxAttempts: 3, Backoff: 10 * time.Second, Timeout: time.Minute}

// Register adds budget_sweep and its built-in cron entry: every process
// that works jobs sweeps every 5 minutes, whatever the config says.
func Register(reg *engine.Registry, w *Worker) {
	engine.Add(reg, Spec, w)
	reg.Cron("budget-sweep", "@every 5m", Args{})
}

// Worker releases expired reservations and marks lost calls.
type Worker struct {
	river.WorkerDefaults[Args]
	Ledger *budget.Ledger
	// Store holds the call records.
	Store *store.Store
	// Hold is how long after its start a call can still be in flight
	// (llm.Client.Hold: llm.call_timeout plus a minute), the same span its
	// reservation is held; a record running longer is lost.
	Hold time.Duration
	// KeepPrompts is llm.keep_prompts: call records older than this lose
	// their kept messages; 0 prunes every one.
	KeepPrompts time.Duration
	Logger      *slog.Logger
}

// Work releases what expired, marks what was lost and prunes old prompts.
// One failing does not stop the others.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	n, err := w.Ledger.ReleaseExpired(ctx)
	if n > 0 {
		w.Logger.Warn("released budget reservations that were never settled", "count", n)
	}
	lost, lostErr := w.Store.MarkLostLLMCalls(ctx, w.Store.Now().Add(-w.Hold))
	if lost > 0 {
		w.Logger.Warn("marked llm calls lost: their worker stopped before they returned", "count", lost)
	}
	pruned, pruneErr := w.Store.PruneLLMPrompts(ctx, w.Store.Now().Add(-w.KeepPrompts))
	if pruned > 0 {
		w.Logger.Info("pruned the kept messages of old llm calls", "count", pruned, "keep_prompts", w.KeepPrompts.String())
	}
	return errors.Join(err, lostErr, pruneErr)
}
