package refinereview

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

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
	return h.step(ctx, tx, client, s, func(g harness.Gate) (harness.Gate, bool) {
		return harness.OnTurn(reopened(g, s), now, h.rules())
	})
}

// CompactionEnded makes a review due (engine.EventHook on
// compaction_end), when harness.compact.
func (h *Hook) CompactionEnded(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session, _ events.Event) error {
	now := h.Store.Now()
	return h.step(ctx, tx, client, s, func(g harness.Gate) (harness.Gate, bool) {
		return harness.OnCompaction(reopened(g, s), now, h.rules())
	})
}

// reopened opens a closed gate again when its session is open: the
// session went idle (the idle sweep ended it, and drained the gate) and
// then went on, as mull's sessions can and the seed's cannot. An ended
// session's gate stays closed: late events start nothing.
func reopened(g harness.Gate, s store.Session) harness.Gate {
	if g.Closed && s.Status == store.SessionOpen {
		g.Closed = false
	}
	return g
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
	stale := false
	if !start && h.stale(g) {
		unqueued := g
		unqueued.Enqueued = false
		if n, ok := move(unqueued); ok {
			next, start, stale = n, true, true
		}
	}
	if start {
		args := Args{Session: s.ID, Workspace: s.Workspace, Trigger: next.PendingReason, Turns: next.Turns}
		res, err := client.InsertTx(ctx, tx, args, nil)
		if err != nil {
			return err
		}
		switch {
		case res.UniqueSkippedAsDuplicate && stale:
			next, _ = move(g) // its job is alive after all (snoozed, paused): as it was
		case res.UniqueSkippedAsDuplicate:
			// A job of this scope is queued or running (a manual refine, a
			// failed attempt waiting for its retry): the review stays due and
			// is attempted again at the next event.
			next.Enqueued = false
		default:
			next.EnqueuedAt = h.Store.Now()
			h.logger().Info("refine_review enqueued", "session_id", s.ID, "trigger", args.Trigger, "turns", args.Turns,
				"job_id", res.Job.ID, "stale_gate", stale)
		}
	}
	if next == g {
		return nil
	}
	return h.Store.PutHarnessGate(ctx, tx, s.ID, s.Workspace, next)
}

// staleAfter is how long after its last attempt started a gate that says
// a review is queued or running is checked against River: attempts start
// at most Spec's timeout plus its backoff apart (20 minutes), so a job
// that went longer without one may have died without ending the gate (a
// panic or a kill on its last attempt, which River discards).
const staleAfter = time.Hour

// stale reports whether g's queued review should be checked: the insert
// then tells, since the job is unique per scope while it lives. The
// anchor is the job's last sign of life, its enqueue or its last
// attempt's start; a gate with neither known (a job queued whose first
// attempt has not started, written without EnqueuedAt) is never stale, so
// turn_end events do not each pay an insert while the first review waits.
func (h *Hook) stale(g harness.Gate) bool {
	anchor := g.LastAttemptAt
	if g.EnqueuedAt.After(anchor) {
		anchor = g.EnqueuedAt
	}
	return g.Enqueued && !g.Closed && !anchor.IsZero() && h.Store.Now().Sub(anchor) > staleAfter
}

func (h *Hook) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}
