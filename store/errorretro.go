package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrorRetro is a session's retro_error state: how many retro_error jobs
// were scheduled for it and when the latest one is due.
type ErrorRetro struct {
	SessionID       string
	Count           int
	LastScheduledAt time.Time
}

// GetErrorRetro reads a session's retro_error state; ok is false when none
// was scheduled.
func (s *Store) GetErrorRetro(ctx context.Context, q querier, sessionID string) (r ErrorRetro, ok bool, err error) {
	err = q.QueryRowContext(ctx, `select session_id, count, last_scheduled_at from error_retros where session_id = $1`,
		sessionID).Scan(&r.SessionID, &r.Count, &r.LastScheduledAt)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("read error retros of session %s: %w", sessionID, err)
	}
	r.LastScheduledAt = r.LastScheduledAt.UTC()
	return r, true, nil
}

// PutErrorRetro writes a session's retro_error state.
func (s *Store) PutErrorRetro(ctx context.Context, tx *sql.Tx, r ErrorRetro) error {
	_, err := tx.ExecContext(ctx, `insert into error_retros (session_id, count, last_scheduled_at) values ($1, $2, $3)
		on conflict (session_id) do update set count = excluded.count, last_scheduled_at = excluded.last_scheduled_at`,
		r.SessionID, r.Count, utcMicro(r.LastScheduledAt))
	if err != nil {
		return fmt.Errorf("write error retros of session %s: %w", r.SessionID, err)
	}
	return nil
}

// SessionPrimary reports whether a stored session is primary (not a
// subagent's); ok is false when it is not stored. Use it inside the
// transaction that stored the session's events.
func (s *Store) SessionPrimary(ctx context.Context, q querier, id string) (primary, ok bool, err error) {
	err = q.QueryRowContext(ctx, `select is_primary from sessions where id = $1`, id).Scan(&primary)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read session %s: %w", id, err)
	}
	return primary, true, nil
}
