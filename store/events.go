package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Where a stored event came from.
const (
	// SourcePush: the bridge plugin sent it to POST /v1/events.
	SourcePush = "push"
	// SourceImport: the importer read it from DSH's session logs.
	SourceImport = "import"
)

// Event is one stored session event. The ingest package validates events
// before they get here; the store keeps them as they are.
type Event struct {
	// ID is the client's id; storing it twice is a no-op.
	ID        string    `json:"id"`
	SessionID string    `json:"session_id"`
	Workspace string    `json:"workspace"`
	Type      string    `json:"type"`
	Time      time.Time `json:"time"`
	// Payload is the type's payload as JSON.
	Payload json.RawMessage `json:"payload"`
	Source  string          `json:"source"`
	// RecordedAt is when mull stored it (transaction time).
	RecordedAt time.Time `json:"recorded_at"`
}

// insertChunk bounds the rows of one insert statement (8 parameters each),
// well under SQLite's and Postgres's parameter limits.
const insertChunk = 250

// InsertEvents stores events whose ids are new, stamping them with the
// store's clock, and returns the ids it inserted: a replayed id is skipped,
// without error, whatever the rest of its event says. Give each id once.
func (s *Store) InsertEvents(ctx context.Context, tx *sql.Tx, evs []Event) (map[string]bool, error) {
	inserted := make(map[string]bool, len(evs))
	now := s.Now()
	for start := 0; start < len(evs); start += insertChunk {
		chunk := evs[start:min(start+insertChunk, len(evs))]
		var q strings.Builder
		q.WriteString(`insert into events (id, session_id, workspace, type, time, payload, source, recorded_at) values `)
		args := make([]any, 0, len(chunk)*8)
		for i, e := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(")
			for j := 1; j <= 8; j++ {
				if j > 1 {
					q.WriteString(", ")
				}
				q.WriteString("$" + strconv.Itoa(i*8+j))
			}
			q.WriteString(")")
			payload := string(e.Payload)
			if payload == "" {
				payload = "{}"
			}
			args = append(args, e.ID, e.SessionID, e.Workspace, e.Type, utcMicro(e.Time), payload, e.Source, now)
		}
		q.WriteString(` on conflict (id) do nothing returning id`)
		if err := collectIDs(ctx, tx, q.String(), args, inserted); err != nil {
			return nil, fmt.Errorf("insert events: %w", err)
		}
	}
	return inserted, nil
}

func collectIDs(ctx context.Context, tx *sql.Tx, q string, args []any, into map[string]bool) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		into[id] = true
	}
	return rows.Err()
}

// SessionEvents lists a session's last limit events (defaults to 50, capped
// at 1000) in the order they happened.
func (s *Store) SessionEvents(ctx context.Context, sessionID string, limit int) ([]Event, error) {
	limit = min(cmp.Or(limit, 50), 1000)
	rows, err := s.DB.QueryContext(ctx, `select id, session_id, workspace, type, time, payload, source, recorded_at
		from events where session_id = $1 order by time desc, id desc limit $2`, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("list events of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var payload string
		if err := rows.Scan(&e.ID, &e.SessionID, &e.Workspace, &e.Type, &e.Time, &payload, &e.Source, &e.RecordedAt); err != nil {
			return nil, err
		}
		e.Payload, e.Time, e.RecordedAt = json.RawMessage(payload), e.Time.UTC(), e.RecordedAt.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}
