package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// NoticeNudge is the kind of the missed-task nudge (learn/reflection.Nudge).
const NoticeNudge = "nudge"

// SessionNotice is a notice for one session (the session_notices table):
// what mull says to that session rather than news of a library.
type SessionNotice struct {
	ID         int64
	SessionID  string
	Kind       string
	Text       string
	Turn       int
	RecordedAt time.Time
	ServedAt   time.Time
}

// InsertSessionNotice stores a notice for a session, one of a kind per
// turn: ok is false when the turn has one of its kind already (a replayed
// turn), and nothing is stored then.
func (s *Store) InsertSessionNotice(ctx context.Context, q querier, n SessionNotice) (id int64, ok bool, err error) {
	switch {
	case strings.TrimSpace(n.SessionID) == "":
		return 0, false, errors.New("session notice: session_id is required")
	case strings.TrimSpace(n.Kind) == "":
		return 0, false, errors.New("session notice: kind is required")
	case strings.TrimSpace(n.Text) == "":
		return 0, false, errors.New("session notice: text is required")
	case n.RecordedAt.IsZero():
		return 0, false, errors.New("session notice: recorded_at is required")
	}
	rows, err := q.QueryContext(ctx, `insert into session_notices (session_id, kind, text, turn, recorded_at)
		values ($1, $2, $3, $4, $5) on conflict (session_id, kind, turn) do nothing returning id`,
		n.SessionID, n.Kind, n.Text, n.Turn, utcMicro(n.RecordedAt))
	if err != nil {
		return 0, false, fmt.Errorf("session %s: store a %s notice: %w", n.SessionID, n.Kind, err)
	}
	defer rows.Close()
	if rows.Next() {
		err = rows.Scan(&id)
		return id, err == nil, err
	}
	return 0, false, rows.Err()
}

// TakeSessionNotices returns, oldest first, the notices of a session not
// served yet and marks them served at at, in one statement: each is served
// once, even to two requests at once.
func (s *Store) TakeSessionNotices(ctx context.Context, q querier, sessionID string, at time.Time) ([]SessionNotice, error) {
	rows, err := q.QueryContext(ctx, `update session_notices set served_at = $2 where session_id = $1 and served_at is null
		returning id, session_id, kind, text, turn, recorded_at, served_at`, sessionID, utcMicro(at))
	if err != nil {
		return nil, fmt.Errorf("session %s: take notices: %w", sessionID, err)
	}
	defer rows.Close()
	var out []SessionNotice
	for rows.Next() {
		var n SessionNotice
		if err := rows.Scan(&n.ID, &n.SessionID, &n.Kind, &n.Text, &n.Turn, &n.RecordedAt, &n.ServedAt); err != nil {
			return nil, err
		}
		n.RecordedAt, n.ServedAt = n.RecordedAt.UTC(), n.ServedAt.UTC()
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// RETURNING gives no order: oldest first by id.
	slices.SortFunc(out, func(a, b SessionNotice) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// ListSessionNotices lists a session's notices, served or not, oldest
// first (for tests and the CLI).
func (s *Store) ListSessionNotices(ctx context.Context, q querier, sessionID string) ([]SessionNotice, error) {
	rows, err := q.QueryContext(ctx, `select id, session_id, kind, text, turn, recorded_at, served_at
		from session_notices where session_id = $1 order by id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("session %s: list notices: %w", sessionID, err)
	}
	defer rows.Close()
	var out []SessionNotice
	for rows.Next() {
		var n SessionNotice
		var served sql.NullTime
		if err := rows.Scan(&n.ID, &n.SessionID, &n.Kind, &n.Text, &n.Turn, &n.RecordedAt, &served); err != nil {
			return nil, err
		}
		n.RecordedAt = n.RecordedAt.UTC()
		if served.Valid {
			n.ServedAt = served.Time.UTC()
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
