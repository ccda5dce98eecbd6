package refinereview

import (
	"context"
	"database/sql"
	"log/slog"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// Register adds the worker and the ingest hooks of the review gate:
// turn_end counts a turn, compaction_end makes a review due, a session's
// end drains a due one.
func Register(reg *engine.Registry, w *Worker, h *Hook) {
	engine.Add(reg, Spec, w)
	reg.OnTurnEnded(h.TurnEnded)
	reg.OnEvent(events.CompactionEnd, h.CompactionEnded)
	reg.OnSessionEnded(h.SessionEnded)
}

// Hook keeps each session's review gate (harness.Gate, in the store, so
// it survives restarts) inside the ingest transaction, and enqueues the
// review in that transaction when the gate's rules say so. With
// harness.enabled false it does nothing (a manual refine still runs).
type Hook struct {
	Store  *store.Store
	Logger *slog.Logger
	// Config is harness.*: enabled, turn_interval, cooldown, compact.
	Config config.Harness
}

func (h *Hook) rules() harness.GateRules {
	return harness.GateRules{TurnInterval: h.Config.TurnInterval, Cooldown: h.Config.Cooldown.D(), Compact: h.Config.CompactOn()}
}

// TurnEnded counts a turn_end (engine.TurnHook).
func (h *Hook) TurnEnded(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session, _ events.Event) error {
	now := h.Store.Now()
	return h.step(ctx, tx, client, s, func(g harness.Gate) (harness.Gate, bool) { return harness.OnTurn(g, now, h.rules()) })
}

// CompactionEnded makes a review due (engine.EventHook on
// compaction_end), when harness.compact.
func (h *Hook) CompactionEnded(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session, _ events.Event) error {
	now := h.Store.Now()
	return h.step(ctx, tx, client, s, func(g harness.Gate) (harness.Gate, bool) { return harness.OnCompaction(g, now, h.rules()) })
}

// SessionEnded drains a due review, ignoring the cooldown, and closes the
// session's gate (engine.SessionHook): the job then runs with trigger
// session-end.
func (h *Hook) SessionEnded(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session) error {
	return h.step(ctx, tx, client, s, func(g harness.Gate) (harness.Gate, bool) {
		next, start := harness.OnSessionEnd(g)
		if start {
			next.PendingReason = harness.SessionEnd
		}
		return next, start
	})
}

// step reads the session's gate, moves it and, when the move says start,
// enqueues the review; the gate is written only when it changed.
func (h *Hook) step(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session,
	move func(harness.Gate) (harness.Gate, bool)) error {
	if !h.Config.On() {
		return nil
	}
	g, err := h.Store.HarnessGate(ctx, tx, s.ID)
	if err != nil {
		return err
	}
	next, start := move(g)
	if start {
		args := Args{Session: s.ID, Workspace: s.Workspace, Trigger: next.PendingReason, Turns: next.Turns}
		res, err := client.InsertTx(ctx, tx, args, nil)
		if err != nil {
			return err
		}
		if res.UniqueSkippedAsDuplicate {
			// A job of this scope is queued or running (a manual refine, a
			// failed attempt waiting for its retry): the review stays due and
			// is attempted again at the next event.
			next.Enqueued = false
		}
		h.logger().Info("refine_review enqueued", "session_id", s.ID, "trigger", args.Trigger, "turns", args.Turns,
			"job_id", res.Job.ID, "duplicate", res.UniqueSkippedAsDuplicate)
	}
	if next == g {
		return nil
	}
	return h.Store.PutHarnessGate(ctx, tx, s.ID, s.Workspace, next)
}

func (h *Hook) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}
