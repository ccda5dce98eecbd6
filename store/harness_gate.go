package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mullhq/mull/learn/harness"
)

// HarnessGate reads a session's review gate (the seed's SessionGateState)
// inside tx: the zero Gate when the session has none yet. On Postgres the
// row is held (select ... for update) until tx ends, so two ingest batches
// of one session count their turns one after the other; SQLite's write
// transaction serializes them anyway.
func (s *Store) HarnessGate(ctx context.Context, tx *sql.Tx, session string) (harness.Gate, error) {
	q := `select turns, pending, pending_reason, enqueued, enqueued_at, last_attempt_at, closed from harness_gates
		where session_id = $1`
	if s.Dialect == Postgres {
		q += ` for update`
	}
	var g harness.Gate
	var reason string
	var last, enqueued sql.NullTime
	err := tx.QueryRowContext(ctx, q, session).Scan(&g.Turns, &g.Pending, &reason, &g.Enqueued, &enqueued, &last, &g.Closed)
	if errors.Is(err, sql.ErrNoRows) {
		return harness.Gate{}, nil
	}
	if err != nil {
		return g, fmt.Errorf("read harness gate of session %s: %w", session, err)
	}
	g.PendingReason = harness.Trigger(reason)
	if last.Valid {
		g.LastAttemptAt = last.Time.UTC()
	}
	if enqueued.Valid {
		g.EnqueuedAt = enqueued.Time.UTC()
	}
	return g, nil
}

// PutHarnessGate writes a session's review gate inside tx (insert or
// replace), stamped with the store's clock.
func (s *Store) PutHarnessGate(ctx context.Context, tx *sql.Tx, session, workspace string, g harness.Gate) error {
	_, err := tx.ExecContext(ctx, `insert into harness_gates (session_id, workspace, turns, pending, pending_reason,
		enqueued, enqueued_at, last_attempt_at, closed, updated_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		on conflict (session_id) do update set workspace = excluded.workspace, turns = excluded.turns,
		pending = excluded.pending, pending_reason = excluded.pending_reason, enqueued = excluded.enqueued,
		enqueued_at = excluded.enqueued_at, last_attempt_at = excluded.last_attempt_at, closed = excluded.closed,
		updated_at = excluded.updated_at`,
		session, workspace, g.Turns, g.Pending, string(g.PendingReason), g.Enqueued, nullTime(g.EnqueuedAt),
		nullTime(g.LastAttemptAt), g.Closed, s.Now())
	if err != nil {
		return fmt.Errorf("put harness gate of session %s: %w", session, err)
	}
	return nil
}
