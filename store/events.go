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
	// Seq is the event's ordinal in its session, from 1, in the order mull
	// stored them (NumberEvents); a task's window is a range of it.
	Seq int64 `json:"seq"`
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

// NumberEvents gives a batch's newly stored events of one session their
// seq: after+1, after+2, … in the order ids gives them. after is the session's
// event_count before the batch, read under its lock (LockSession), so two
// batches never number alike.
func (s *Store) NumberEvents(ctx context.Context, tx *sql.Tx, sessionID string, after int64, ids []string) error {
	const chunk = 200 // 3 parameters each
	for start := 0; start < len(ids); start += chunk {
		part := ids[start:min(start+chunk, len(ids))]
		var cases, in strings.Builder
		args := []any{sessionID}
		for i, id := range part {
			args = append(args, id, after+int64(start+i)+1)
			n := len(args)
			fmt.Fprintf(&cases, " when $%d then cast($%d as bigint)", n-1, n)
			if i > 0 {
				in.WriteString(", ")
			}
			in.WriteString("$" + strconv.Itoa(n-1))
		}
		q := `update events set seq = case id` + cases.String() + ` end where session_id = $1 and id in (` + in.String() + `)`
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("number events of session %s: %w", sessionID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(part)) {
			return fmt.Errorf("number events of session %s: %d of %d events found (%v)", sessionID, n, len(part), err)
		}
	}
	return nil
}

const eventColumns = `id, session_id, workspace, type, time, payload, source, recorded_at, seq`

// SessionEvents lists a session's last limit events (defaults to 50, capped
// at 1000) in the order they happened.
func (s *Store) SessionEvents(ctx context.Context, sessionID string, limit int) ([]Event, error) {
	limit = min(cmp.Or(limit, 50), 1000)
	out, err := queryEvents(ctx, s.DB, `select `+eventColumns+`
		from events where session_id = $1 order by time desc, id desc limit $2`, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("list events of session %s: %w", sessionID, err)
	}
	slices.Reverse(out)
	return out, nil
}

// EventsBySeq lists a session's events with from < seq <= to, by seq, at
// most limit (defaults to 1000, capped at 10000): a task's window is
// (open_seq, close_seq]. A longer window keeps its first event (the task's
// start: the user's request) and its newest limit-1, because a task ends
// in its result and its failures; the middle is what is cut.
func (s *Store) EventsBySeq(ctx context.Context, q querier, sessionID string, from, to int64, limit int) ([]Event, error) {
	limit = max(min(cmp.Or(limit, 1000), 10000), 2)
	newest, err := queryEvents(ctx, q, `select `+eventColumns+` from events
		where session_id = $1 and seq > $2 and seq <= $3 order by seq desc limit $4`, sessionID, from, to, limit)
	if err != nil {
		return nil, fmt.Errorf("list events %d..%d of session %s: %w", from, to, sessionID, err)
	}
	slices.Reverse(newest)
	if len(newest) < limit {
		return newest, nil
	}
	first, err := queryEvents(ctx, q, `select `+eventColumns+` from events
		where session_id = $1 and seq > $2 and seq <= $3 order by seq limit 1`, sessionID, from, to)
	if err != nil {
		return nil, fmt.Errorf("list events %d..%d of session %s: %w", from, to, sessionID, err)
	}
	if len(first) == 1 && first[0].Seq < newest[0].Seq {
		newest = append(first, newest[1:]...)
	}
	return newest, nil
}

// LastEventSeq is the largest seq of a session's events (0 when it has
// none): where a task opened now starts its window.
func (s *Store) LastEventSeq(ctx context.Context, q querier, sessionID string) (int64, error) {
	var seq int64
	err := q.QueryRowContext(ctx, `select coalesce(max(seq), 0) from events where session_id = $1`, sessionID).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("last event of session %s: %w", sessionID, err)
	}
	return seq, nil
}

func queryEvents(ctx context.Context, q querier, query string, args ...any) ([]Event, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var payload string
		if err := rows.Scan(&e.ID, &e.SessionID, &e.Workspace, &e.Type, &e.Time, &payload, &e.Source, &e.RecordedAt, &e.Seq); err != nil {
			return nil, err
		}
		e.Payload, e.Time, e.RecordedAt = json.RawMessage(payload), e.Time.UTC(), e.RecordedAt.UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}
