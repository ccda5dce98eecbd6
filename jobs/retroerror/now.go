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
	if !s.Primary {
		return Asked{Message: fmt.Sprintf("session %s is a subagent's: its parent session's retro learns from its events", s.ID)}, nil
	}
	if h.Workspaces != nil && !h.Workspaces.Effective(s.Workspace).RetroOn() {
		return Asked{Message: fmt.Sprintf("retros are off for workspace %s (its retro setting): `mull config print --workspace %s` shows where that comes from", s.Workspace, s.Workspace)}, nil
	}
	if learnable(s) == 0 {
		return Asked{Message: fmt.Sprintf("session %s has no event to learn from yet", s.ID)}, nil
	}
	last, err := h.Store.LastRetroOf(ctx, tx, s.ID)
	if err != nil {
		return Asked{}, err
	}
	if !last.IsZero() && !last.Before(s.LastEventAt) {
		return Asked{Message: fmt.Sprintf("session %s had its retro at %s, after its last event (%s): nothing new to learn",
			s.ID, last.UTC().Format(time.RFC3339), s.LastEventAt.UTC().Format(time.RFC3339))}, nil
	}
	if id, state, ok, err := h.Store.WaitingRetro(ctx, tx, s.ID); err != nil || ok {
		return Asked{JobID: id, State: state, Message: fmt.Sprintf("a retro of session %s is already queued (job %d, %s)", s.ID, id, state)}, err
	}
	state, _, err := h.Store.GetErrorRetro(ctx, tx, s.ID)
	if err != nil {
		return Asked{}, err
	}
	at := now
	if !state.LastScheduledAt.IsZero() {
		at = later(at, state.LastScheduledAt.Add(h.rules().MinGap))
	}
	at = later(at, notBefore)
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
	a := Asked{JobID: res.Job.ID, State: string(res.Job.State), At: at, Enqueued: true,
		Message: fmt.Sprintf("retro of session %s queued as job %d", s.ID, res.Job.ID)}
	if at.After(now) {
		a.Message += fmt.Sprintf("; it runs at %s", at.UTC().Format(time.RFC3339))
	}
	return a, nil
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
