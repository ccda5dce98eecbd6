package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// TurnWindow is the seq range of the turn a stored turn_end event ends:
// from the previous turn_end of its session (0 when none) to this one,
// as EventsBySeq reads it, (from, to]. An event not stored is ErrNotFound.
func (s *Store) TurnWindow(ctx context.Context, q querier, sessionID, turnEndID string) (from, to int64, err error) {
	err = q.QueryRowContext(ctx, `select e.seq, coalesce((select max(p.seq) from events p
		where p.session_id = e.session_id and p.type = 'turn_end' and p.seq < e.seq), 0)
		from events e where e.session_id = $1 and e.id = $2`, sessionID, turnEndID).Scan(&to, &from)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, fmt.Errorf("turn of event %s in session %s: %w", turnEndID, sessionID, ErrNotFound)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("turn of event %s in session %s: %w", turnEndID, sessionID, err)
	}
	return from, to, nil
}
