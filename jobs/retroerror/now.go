package retroerror

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/store"
)

// Asked is what Now did with a request for a session's retro.
type Asked struct {
	// JobID is the retro's job: the one enqueued, or the one already
	// waiting; 0 when there is nothing to learn.
	JobID int64
	// State is the job's River state (available, scheduled, …).
	State string
	// At is when it may run.
	At time.Time
	// Enqueued: a new job; false when one was waiting or there is nothing
	// to learn.
	Enqueued bool
	// Message says what happened, for the person who asked.
	Message string
}

// Now enqueues a retro of session s now (the /retro slash command, POST
// /v1/sessions/{id}/retro), through the automatic retro's path and guards,
// in tx: nothing for a subagent's session (its parent's retro reads its
// events), for one with no event to learn from, or for one retro'd after
// its last event; the waiting retro when one of the session's is queued
// (one retro at a time, never two); otherwise a retro_session job, no
// sooner than MinGap after the session's last retro and than notBefore
// (the budget's reset, when the budget is spent), recorded as the
// session's latest retro so an error retro after it keeps the gap too.
func (h *Hook) Now(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session, notBefore time.Time) (Asked, error) {
	// The session's row lock (Postgres), as ingest takes it: two asks at
	// once queue one retro, and an error retro scheduled meanwhile is seen.
	s, _, err := h.Store.LockSession(ctx, tx, s.ID, s.Workspace, s.LastEventAt)
	if err != nil {
		return Asked{}, err
	}
	now := h.Store.Now()
	retroOn := h.Workspaces == nil || h.Workspaces.Effective(s.Workspace).RetroOn()
	if why := nothingToAsk(s, retroOn); why != "" {
		return Asked{Message: why}, nil
	}
	last, err := h.Store.LastRetroOf(ctx, tx, s.ID)
	if err != nil {
		return Asked{}, err
	}
	if why := learnedAlready(s, last); why != "" {
		return Asked{Message: why}, nil
	}
	if id, state, ok, err := h.Store.WaitingRetro(ctx, tx, s.ID); err != nil || ok {
		return Asked{JobID: id, State: state, Message: fmt.Sprintf("a retro of session %s is already queued (job %d, %s)", s.ID, id, state)}, err
	}
	state, _, err := h.Store.GetErrorRetro(ctx, tx, s.ID)
	if err != nil {
		return Asked{}, err
	}
	at := runAt(now, state.LastScheduledAt, h.rules().MinGap, notBefore)
	var opts *river.InsertOpts
	if at.After(now) {
		opts = &river.InsertOpts{ScheduledAt: at}
	}
	res, err := client.InsertTx(ctx, tx, retrosession.Args{SessionID: s.ID, Through: s.LastEventAt.UTC().Format(time.RFC3339Nano),
		Requested: now.UTC().Format(time.RFC3339Nano)}, opts)
	if err != nil {
		return Asked{}, err
	}
	state.SessionID, state.LastScheduledAt = s.ID, at
	if err := h.Store.PutErrorRetro(ctx, tx, state); err != nil {
		return Asked{}, err
	}
	return Asked{JobID: res.Job.ID, State: string(res.Job.State), At: at, Enqueued: true,
		Message: queuedMessage(s.ID, res.Job.ID, at, now)}, nil
}

// nothingToAsk says why session s gets no retro whatever its history
// holds ("" when it may): a subagent's session (its parent's retro reads
// its events), a workspace whose retros are off, a session with no event
// but its start and end.
func nothingToAsk(s store.Session, retroOn bool) string {
	switch {
	case !s.Primary:
		return fmt.Sprintf("session %s is a subagent's: its parent session's retro learns from its events", s.ID)
	case !retroOn:
		return fmt.Sprintf("retros are off for workspace %s (its retro setting): `mull config print --workspace %s` shows where that comes from", s.Workspace, s.Workspace)
	case learnable(s) == 0:
		return fmt.Sprintf("session %s has no event to learn from yet", s.ID)
	}
	return ""
}

// learnedAlready says why session s, retro'd last at last (zero: never),
// has nothing new to learn ("" when it has): that retro came at or after
// its last event.
func learnedAlready(s store.Session, last time.Time) string {
	if last.IsZero() || last.Before(s.LastEventAt) {
		return ""
	}
	return fmt.Sprintf("session %s had its retro at %s, after its last event (%s): nothing new to learn",
		s.ID, last.UTC().Format(time.RFC3339), s.LastEventAt.UTC().Format(time.RFC3339))
}

// runAt is when an asked retro may run: now, but no sooner than minGap
// after the session's last scheduled retro (zero: none) and than
// notBefore (zero: no bound).
func runAt(now, lastScheduled time.Time, minGap time.Duration, notBefore time.Time) time.Time {
	at := now
	if !lastScheduled.IsZero() {
		at = later(at, lastScheduled.Add(minGap))
	}
	return later(at, notBefore)
}

// queuedMessage tells the person who asked that the retro is job id, and
// when it runs if that is not now.
func queuedMessage(session string, id int64, at, now time.Time) string {
	msg := fmt.Sprintf("retro of session %s queued as job %d", session, id)
	if at.After(now) {
		msg += fmt.Sprintf("; it runs at %s", at.UTC().Format(time.RFC3339))
	}
	return msg
}

// learnable counts a session's events other than its start and end.
func learnable(s store.Session) int64 {
	return s.Events - s.Counts[string(events.SessionStart)] - s.Counts[string(events.SessionEnd)]
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
