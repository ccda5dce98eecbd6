package store

import (
	"context"
	"fmt"
	"time"
)

// Quarantined is a text the trust gate held back that has no flagged row
// of its own (a retro's handoff, playbook, proposal or supersede target; a
// consolidation's merge or derived line): kept for review with the gate's
// reason, never served. Text is already redacted.
type Quarantined struct {
	ID         int64
	Workspace  string
	Kind       string
	Text       string
	Reason     string
	SessionID  string
	JobID      int64
	RecordedAt time.Time
}

// InsertQuarantined keeps one quarantined text.
func (s *Store) InsertQuarantined(ctx context.Context, q querier, r Quarantined) error {
	_, err := q.ExecContext(ctx, `insert into quarantine (workspace, kind, text, reason, session_id, job_id, recorded_at)
		values ($1, $2, $3, $4, $5, $6, $7)`,
		r.Workspace, r.Kind, r.Text, r.Reason, r.SessionID, r.JobID, utcMicro(r.RecordedAt))
	if err != nil {
		return fmt.Errorf("keep quarantined %s of %q: %w", r.Kind, r.Workspace, err)
	}
	return nil
}

// ListQuarantined lists a workspace's quarantined texts, oldest first.
func (s *Store) ListQuarantined(ctx context.Context, q querier, workspace string) ([]Quarantined, error) {
	rows, err := q.QueryContext(ctx, `select id, workspace, kind, text, reason, session_id, job_id, recorded_at
		from quarantine where workspace = $1 order by id`, workspace)
	if err != nil {
		return nil, fmt.Errorf("list quarantined of %q: %w", workspace, err)
	}
	defer rows.Close()
	var out []Quarantined
	for rows.Next() {
		var r Quarantined
		if err := rows.Scan(&r.ID, &r.Workspace, &r.Kind, &r.Text, &r.Reason, &r.SessionID, &r.JobID, &r.RecordedAt); err != nil {
			return nil, err
		}
		r.RecordedAt = r.RecordedAt.UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}
