// Package ledgersweep is the negative ledger's housekeeping (seed 003):
// it releases retry leases whose holder never reported back (a crashed
// process, a killed DSH), so the next verify-retry does not wait for a
// check to notice, counts the facts whose TTL passed, and prunes receipts,
// file observations and warning dedupe rows older than they can matter.
package ledgersweep

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/negledger"
)

// Args: none.
type Args struct{}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "ledger_sweep" }

// Spec: maintenance work, retried quickly; a sweep is idempotent.
var Spec = engine.Spec{Queue: "maintenance", MaxAttempts: 3, Backoff: 10 * time.Second, Timeout: time.Minute}

// Schedule is the built-in cron entry's: a minute is ledger.lease_ttl's
// default, so an abandoned lease is gone within two TTLs.
const Schedule = "@every 1m"

// Register adds ledger_sweep and its built-in cron entry: every process
// that works jobs sweeps, whatever the config says.
func Register(reg *engine.Registry, w *Worker) {
	engine.Add(reg, Spec, w)
	reg.Cron("ledger-sweep", Schedule, Args{})
}

// Worker sweeps the ledger.
type Worker struct {
	river.WorkerDefaults[Args]
	Ledger *negledger.Service
	Logger *slog.Logger
}

// Work runs one sweep and logs what it did when it did anything.
func (w *Worker) Work(ctx context.Context, _ *river.Job[Args]) error {
	rep, err := w.Ledger.Sweep(ctx)
	if err != nil {
		return err
	}
	if rep != (negledger.SweepReport{}) {
		w.Logger.Info("swept the negative ledger", "leases_released", rep.LeasesReleased, "expired", rep.Expired,
			"receipts_pruned", rep.ReceiptsPruned, "observations_pruned", rep.ObservationsPruned,
			"warnings_pruned", rep.WarningsPruned)
	}
	return nil
}
