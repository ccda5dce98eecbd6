package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ConsolidateState is a workspace's sleep-time consolidation state.
type ConsolidateState struct {
	Workspace string
	// Watermark is the highest memory id the last finished run covered;
	// the next run looks for duplicates among memories newer than it.
	Watermark int64
	// SessionsSince counts the workspace's sessions ended since the last
	// run started.
	SessionsSince int
	// RunID is the workflow run in flight, "" when none.
	RunID          string
	LastStartedAt  time.Time
	LastFinishedAt time.Time
	// LastCounts is what the last finished run did, as JSON.
	LastCounts string
	// LastJobID is the last consolidate job that looked at the workspace
	// and LastNote what it decided.
	LastJobID int64
	LastNote  string
	// LastRunID is the run LastNote is about: the one the last planner
	// started or the derive step last finished; "" when the planner
	// skipped.
	LastRunID string
}

const consolidateColumns = `workspace, watermark, sessions_since, run_id, last_started_at, last_finished_at, last_counts, last_job_id, last_note, last_run_id`

// LockConsolidateState reads a workspace's state, creating it empty when
// missing, and on Postgres locks its row until tx ends, so the session-end
// hook, the sweep and the planner see one another's writes in order. SQLite
// needs no lock: its transactions are immediate.
func (s *Store) LockConsolidateState(ctx context.Context, tx *sql.Tx, workspace string) (ConsolidateState, error) {
	if _, err := tx.ExecContext(ctx, `insert into consolidate_state (workspace) values ($1) on conflict (workspace) do nothing`,
		workspace); err != nil {
		return ConsolidateState{}, fmt.Errorf("create consolidate state of %q: %w", workspace, err)
	}
	q := `select ` + consolidateColumns + ` from consolidate_state where workspace = $1`
	if s.Dialect == Postgres {
		q += ` for update`
	}
	st, err := scanConsolidateState(tx.QueryRowContext(ctx, q, workspace))
	if err != nil {
		return st, fmt.Errorf("lock consolidate state of %q: %w", workspace, err)
	}
	return st, nil
}

// GetConsolidateState reads a workspace's state; ok is false when the
// workspace was never consolidated or counted.
func (s *Store) GetConsolidateState(ctx context.Context, q querier, workspace string) (st ConsolidateState, ok bool, err error) {
	st, err = scanConsolidateState(q.QueryRowContext(ctx, `select `+consolidateColumns+` from consolidate_state where workspace = $1`, workspace))
	if errors.Is(err, sql.ErrNoRows) {
		return ConsolidateState{Workspace: workspace, LastCounts: "{}"}, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("read consolidate state of %q: %w", workspace, err)
	}
	return st, true, nil
}

// ListConsolidateStates lists every workspace's state by workspace.
func (s *Store) ListConsolidateStates(ctx context.Context, q querier) ([]ConsolidateState, error) {
	rows, err := q.QueryContext(ctx, `select `+consolidateColumns+` from consolidate_state order by workspace`)
	if err != nil {
		return nil, fmt.Errorf("list consolidate states: %w", err)
	}
	defer rows.Close()
	var out []ConsolidateState
	for rows.Next() {
		st, err := scanConsolidateState(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// PutConsolidateState writes a workspace's state (lock it first).
func (s *Store) PutConsolidateState(ctx context.Context, tx *sql.Tx, st ConsolidateState) error {
	if st.LastCounts == "" {
		st.LastCounts = "{}"
	}
	_, err := tx.ExecContext(ctx, `insert into consolidate_state (`+consolidateColumns+`) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		on conflict (workspace) do update set watermark = excluded.watermark, sessions_since = excluded.sessions_since,
		run_id = excluded.run_id, last_started_at = excluded.last_started_at, last_finished_at = excluded.last_finished_at,
		last_counts = excluded.last_counts, last_job_id = excluded.last_job_id, last_note = excluded.last_note,
		last_run_id = excluded.last_run_id`,
		st.Workspace, st.Watermark, st.SessionsSince, st.RunID, nullTime(st.LastStartedAt), nullTime(st.LastFinishedAt), st.LastCounts,
		st.LastJobID, st.LastNote, st.LastRunID)
	if err != nil {
		return fmt.Errorf("write consolidate state of %q: %w", st.Workspace, err)
	}
	return nil
}

// WorkspacesWithNewMemories lists the libraries ("" is the global one)
// that have live memories newer than their consolidation watermark, other
// than consolidation's own (origin sleep): the ones the nightly sweep
// consolidates.
func (s *Store) WorkspacesWithNewMemories(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `select distinct m.workspace from memories m
		left join consolidate_state c on c.workspace = m.workspace
		where m.id > coalesce(c.watermark, 0) and m.invalid_at is null and not m.quarantined and m.origin <> 'sleep'
		order by m.workspace`)
	if err != nil {
		return nil, fmt.Errorf("list workspaces with new memories: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ws string
		if err := rows.Scan(&ws); err != nil {
			return nil, err
		}
		out = append(out, ws)
	}
	return out, rows.Err()
}

// MemoriesByID reads memories by id, in id order; ids not stored are
// missing from the result.
func (s *Store) MemoriesByID(ctx context.Context, q querier, ids []int64) ([]Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ph := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		ph[i] = "$" + strconv.Itoa(i+1)
		args[i] = id
	}
	return s.queryMemories(ctx, q, `select `+memoryColumns+` from memories where id in (`+strings.Join(ph, ", ")+`) order by id`, args...)
}

func scanConsolidateState(row scanner) (ConsolidateState, error) {
	var st ConsolidateState
	var started, finished sql.NullTime
	if err := row.Scan(&st.Workspace, &st.Watermark, &st.SessionsSince, &st.RunID, &started, &finished, &st.LastCounts, &st.LastJobID, &st.LastNote, &st.LastRunID); err != nil {
		return st, err
	}
	if started.Valid {
		st.LastStartedAt = started.Time.UTC()
	}
	if finished.Valid {
		st.LastFinishedAt = finished.Time.UTC()
	}
	return st, nil
}
