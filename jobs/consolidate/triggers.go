package consolidate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/mullhq/mull/engine"
	rules "github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/store"
)

// SweepArgs are the consolidate_sweep job's (none): the cron entry that
// consolidates every workspace with new memory.
type SweepArgs struct{}

// Kind is stable: it is stored with every job.
func (SweepArgs) Kind() string { return "consolidate_sweep" }

// SweepSpec: quick, on the maintenance queue.
var SweepSpec = engine.Spec{Queue: "maintenance", MaxAttempts: 3, Backoff: time.Minute, Timeout: time.Minute}

// Sweep works consolidate_sweep jobs.
type Sweep struct {
	river.WorkerDefaults[SweepArgs]
	d Deps
}

// Work enqueues a cron planner for each library with memories newer than
// its watermark, outside its cooldown and with no run in flight, and
// completes itself in the same transaction. The planner checks again under
// the lock; this only keeps the queue free of planners that would skip.
func (s *Sweep) Work(ctx context.Context, job *river.Job[SweepArgs]) error {
	d := s.d
	client := river.ClientFromContext[*sql.Tx](ctx)
	var n int
	err := d.Store.InTx(ctx, func(tx *sql.Tx) error {
		due, err := d.Store.WorkspacesWithNewMemories(ctx, tx)
		if err != nil {
			return err
		}
		now := d.Store.Now()
		for _, ws := range due {
			st, ok, err := d.Store.GetConsolidateState(ctx, tx, ws)
			if err != nil {
				return err
			}
			if ok {
				busy, err := running(ctx, d.Store, tx, st)
				if err != nil {
					return err
				}
				if !rules.Due(st.LastStartedAt, busy, now, d.Settings.Cooldown) {
					continue
				}
			}
			if _, err := client.InsertTx(ctx, tx, Args{Workspace: ws, Reason: ReasonCron}, nil); err != nil {
				return fmt.Errorf("enqueue consolidate of %q: %w", ws, err)
			}
			n++
		}
		_, err = river.JobCompleteTx[riverdriver.Driver[*sql.Tx]](ctx, tx, job)
		return err
	})
	if err != nil {
		return err
	}
	d.Logger.Info("consolidate sweep", "job_id", job.ID, "enqueued", n)
	return nil
}

// running reports whether the state's run is still running. A run that
// failed (its dead letters not retried) or was deleted is not: it must not
// hold back the triggers. The run is read, not locked (see plan).
func running(ctx context.Context, s *store.Store, tx *sql.Tx, st store.ConsolidateState) (bool, error) {
	if st.RunID == "" {
		return false, nil
	}
	status, err := s.WorkflowRunStatus(ctx, tx, st.RunID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return status == store.WorkflowRunning, err
}

// Hook counts session ends per workspace for the "N sessions since the
// last run" trigger.
type Hook struct {
	Store    *store.Store
	Settings Settings
}

// SessionEnded is an ingest.Hooks.SessionEnded: inside the ingest
// transaction, a primary session's end counts toward its workspace's next
// run, and the Nth since the last run enqueues a planner, TriggerDelay
// later so the session's own retro lands first.
func (h *Hook) SessionEnded(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session) error {
	if !s.Primary {
		return nil
	}
	set := h.Settings.withDefaults()
	st, err := h.Store.LockConsolidateState(ctx, tx, s.Workspace)
	if err != nil {
		return err
	}
	st.SessionsSince++
	now := h.Store.Now()
	busy, err := running(ctx, h.Store, tx, st)
	if err != nil {
		return err
	}
	if rules.SessionsDue(st.SessionsSince, set.AfterSessions, rules.Due(st.LastStartedAt, busy, now, set.Cooldown)) {
		if _, err := client.InsertTx(ctx, tx, Args{Workspace: s.Workspace, Reason: ReasonSessions},
			&river.InsertOpts{ScheduledAt: now.Add(set.TriggerDelay)}); err != nil {
			return fmt.Errorf("enqueue consolidate of %q: %w", s.Workspace, err)
		}
	}
	return h.Store.PutConsolidateState(ctx, tx, st)
}
