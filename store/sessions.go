package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Session statuses. Ended is final; idle is a guess that a later event
// takes back (the session becomes open again).
const (
	SessionOpen  = "open"
	SessionEnded = "ended"
	SessionIdle  = "idle"
)

// Session is a DSH session as its events describe it. Its JSON form is what
// the CLI and GET /v1/sessions show.
type Session struct {
	// ID is DSH's session id.
	ID string `json:"id"`
	// Workspace is the DSH cwd of the session's first event.
	Workspace string `json:"workspace"`
	Status    string `json:"status"`
	// Primary is false for subagent sessions.
	Primary      bool       `json:"primary"`
	Title        string     `json:"title,omitempty"`
	FirstEventAt time.Time  `json:"first_event_at"`
	LastEventAt  time.Time  `json:"last_event_at"`
	EndedAt      *time.Time `json:"ended_at,omitempty"`
	// EndReason is the session_end payload's reason, or "idle".
	EndReason string `json:"end_reason,omitempty"`
	// Counts are the events stored, by type.
	Counts map[string]int64 `json:"counts"`
	// Events is the number of events stored in all.
	Events int64 `json:"events"`
	// Nudges counts the missed-task nudges served this session
	// (IncrementNudges; SaveSession leaves it alone).
	Nudges    int       `json:"nudges"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SessionFilter narrows ListSessions. Empty fields match everything.
type SessionFilter struct {
	Workspace string
	Status    string
	// Limit defaults to 50 and is capped at 1000.
	Limit int
}

const sessionColumns = `id, workspace, status, is_primary, title, first_event_at, last_event_at,
	ended_at, end_reason, counts, event_count, created_at, updated_at, nudges`

// LockSession reads a session and, on Postgres, locks its row until tx
// ends; a session not yet stored is created open, with at as its first and
// last event time, and created reports that. Every batch that changes a
// session holds this lock, so a push and an import of the same session run
// one after the other. SQLite needs no lock: its transactions are immediate.
func (s *Store) LockSession(ctx context.Context, tx *sql.Tx, id, workspace string, at time.Time) (sess Session, created bool, err error) {
	now := s.Now()
	res, err := tx.ExecContext(ctx, `insert into sessions (id, workspace, status, first_event_at, last_event_at, created_at, updated_at)
		values ($1, $2, $3, $4, $4, $5, $5) on conflict (id) do nothing`, id, workspace, SessionOpen, utcMicro(at), now)
	if err != nil {
		return sess, false, fmt.Errorf("create session %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return sess, false, err
	}
	q := `select ` + sessionColumns + ` from sessions where id = $1`
	if s.Dialect == Postgres {
		q += ` for update`
	}
	sess, err = scanSession(tx.QueryRowContext(ctx, q, id))
	if err != nil {
		return sess, false, fmt.Errorf("lock session %s: %w", id, err)
	}
	return sess, n == 1, nil
}

// SaveSession writes back what a batch changed in a session it locked, and
// stamps its UpdatedAt.
func (s *Store) SaveSession(ctx context.Context, tx *sql.Tx, sess *Session) error {
	counts := []byte("{}")
	if len(sess.Counts) > 0 {
		counts, _ = json.Marshal(sess.Counts) // a map[string]int64 always marshals
	}
	var ended *time.Time
	if sess.EndedAt != nil {
		t := utcMicro(*sess.EndedAt)
		ended = &t
	}
	sess.UpdatedAt = s.Now()
	_, err := tx.ExecContext(ctx, `update sessions set status = $2, is_primary = $3, title = $4, first_event_at = $5,
		last_event_at = $6, ended_at = $7, end_reason = $8, counts = $9, event_count = $10, updated_at = $11
		where id = $1`, sess.ID, sess.Status, sess.Primary, sess.Title, utcMicro(sess.FirstEventAt),
		utcMicro(sess.LastEventAt), ended, sess.EndReason, string(counts), sess.Events, sess.UpdatedAt)
	if err != nil {
		return fmt.Errorf("save session %s: %w", sess.ID, err)
	}
	return nil
}

// OpenSessionsBefore lists, oldest first, up to limit open sessions whose
// last event is before t: the candidates for going idle.
func (s *Store) OpenSessionsBefore(ctx context.Context, t time.Time, limit int) ([]string, error) {
	rows, err := s.DB.QueryContext(ctx, `select id from sessions where status = $1 and last_event_at < $2
		order by last_event_at, id limit $3`, SessionOpen, utcMicro(t), limit)
	if err != nil {
		return nil, fmt.Errorf("list idle sessions: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// IdleSession marks a session idle if it is still open with its last event
// before t, and returns it then; ok is false when a newer event or an end
// got there first. The update takes the row's lock, and on Postgres it
// re-checks the condition after waiting for a batch that held it.
func (s *Store) IdleSession(ctx context.Context, tx *sql.Tx, id string, t time.Time) (sess Session, ok bool, err error) {
	now := s.Now()
	res, err := tx.ExecContext(ctx, `update sessions set status = $2, ended_at = $3, end_reason = $4, updated_at = $3
		where id = $1 and status = $5 and last_event_at < $6`, id, SessionIdle, now, SessionIdle, SessionOpen, utcMicro(t))
	if err != nil {
		return sess, false, fmt.Errorf("idle session %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return sess, false, err
	}
	sess, err = scanSession(tx.QueryRowContext(ctx, `select `+sessionColumns+` from sessions where id = $1`, id))
	return sess, err == nil, err
}

// ListSessions lists sessions, most recently active first.
func (s *Store) ListSessions(ctx context.Context, f SessionFilter) ([]Session, error) {
	limit := min(cmp.Or(f.Limit, 50), 1000)
	rows, err := s.DB.QueryContext(ctx, `select `+sessionColumns+` from sessions
		where ($1 = '' or workspace = $1) and ($2 = '' or status = $2)
		order by last_event_at desc, id limit $3`, f.Workspace, f.Status, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	return out, rows.Err()
}

// GetSession reads one session, or ErrNotFound.
func (s *Store) GetSession(ctx context.Context, id string) (Session, error) {
	sess, err := scanSession(s.DB.QueryRowContext(ctx, `select `+sessionColumns+` from sessions where id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return sess, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return sess, err
}

// GetSessionIn is GetSession through q, so a caller inside a transaction
// reads it there (SQLite has one connection: reading through the database
// while a transaction holds it would wait forever).
func (s *Store) GetSessionIn(ctx context.Context, q querier, id string) (Session, error) {
	sess, err := scanSession(q.QueryRowContext(ctx, `select `+sessionColumns+` from sessions where id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return sess, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return sess, err
}

func scanSession(row scanner) (Session, error) {
	var sess Session
	var counts string
	var ended sql.NullTime
	if err := row.Scan(&sess.ID, &sess.Workspace, &sess.Status, &sess.Primary, &sess.Title, &sess.FirstEventAt,
		&sess.LastEventAt, &ended, &sess.EndReason, &counts, &sess.Events, &sess.CreatedAt, &sess.UpdatedAt, &sess.Nudges); err != nil {
		return sess, err
	}
	if err := json.Unmarshal([]byte(counts), &sess.Counts); err != nil {
		return sess, fmt.Errorf("session %s: bad counts %q: %w", sess.ID, counts, err)
	}
	if sess.Counts == nil {
		sess.Counts = map[string]int64{}
	}
	sess.FirstEventAt, sess.LastEventAt = sess.FirstEventAt.UTC(), sess.LastEventAt.UTC()
	sess.CreatedAt, sess.UpdatedAt, sess.EndedAt = sess.CreatedAt.UTC(), sess.UpdatedAt.UTC(), utcPtr(ended)
	return sess, nil
}

// utcMicro is how mull binds a time: UTC, to the microsecond, so both
// dialects store and return the same value and SQLite's text compares.
func utcMicro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// DeleteEmptySession removes a session that has no events: one LockSession
// created for a batch whose events all turned out to be stored already,
// under another session.
func (s *Store) DeleteEmptySession(ctx context.Context, tx *sql.Tx, id string) error {
	if _, err := tx.ExecContext(ctx, `delete from sessions where id = $1 and event_count = 0`, id); err != nil {
		return fmt.Errorf("delete empty session %s: %w", id, err)
	}
	return nil
}

// SessionPushed reports whether any of a session's events came from the
// bridge plugin (source push) rather than DSH's logs: the idle sweep's test
// for a live session.
func (s *Store) SessionPushed(ctx context.Context, tx *sql.Tx, id string) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `select count(*) from (select 1 from events where session_id = $1 and source = $2 limit 1) p`,
		id, SourcePush).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("session %s: look for pushed events: %w", id, err)
	}
	return n > 0, nil
}

// IncrementNudges counts one more missed-task nudge for a session unless it
// has had max already; ok reports whether it counted (the caller serves the
// nudge only then). One statement, so two requests at once never both pass
// the cap. A session not stored is ErrNotFound.
func (s *Store) IncrementNudges(ctx context.Context, q querier, sessionID string, max int) (ok bool, err error) {
	res, err := q.ExecContext(ctx, `update sessions set nudges = nudges + 1 where id = $1 and nudges < $2`, sessionID, max)
	if err != nil {
		return false, fmt.Errorf("count a nudge for session %s: %w", sessionID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return n == 1, err
	}
	var one int
	err = q.QueryRowContext(ctx, `select 1 from sessions where id = $1`, sessionID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	return false, err
}

// DecrementNudges gives back a nudge IncrementNudges counted that was not
// served after all (its turn already had one), in the same transaction.
func (s *Store) DecrementNudges(ctx context.Context, q querier, sessionID string) error {
	if _, err := q.ExecContext(ctx, `update sessions set nudges = nudges - 1 where id = $1 and nudges > 0`, sessionID); err != nil {
		return fmt.Errorf("give back a nudge of session %s: %w", sessionID, err)
	}
	return nil
}
