package workflows

import (
	"context"
	"database/sql"

	"github.com/mullhq/mull/engine"
)

// SetBeforeCommit lets tests fail a step's completion transaction at its
// very end, as a crash before commit would.
func (r *Runner) SetBeforeCommit(fn func(step string) error) { r.beforeCommit = fn }

// SetBeforeRunLock lets tests act just before a step's success takes its
// run's row.
func (r *Runner) SetBeforeRunLock(fn func(step string)) { r.beforeRunLock = fn }

// CancelTx is Cancel in the caller's transaction, so a test can take the
// run's row first, as Cancel does, and cancel the rest later.
func (r *Runner) CancelTx(ctx context.Context, tx *sql.Tx, client *engine.Client, runID string) error {
	return r.cancel(ctx, tx, client, runID)
}
