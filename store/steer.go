package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The buckets LibraryCounts sorts memories into.
const (
	CountLive        = "live"
	CountSuperseded  = "superseded"
	CountQuarantined = "quarantined"
	CountDeprecated  = "deprecated"
	// CountInvalidated is every other invalidated memory: forgotten,
	// expired by an operator, removed.
	CountInvalidated = "invalidated"
)

// BucketCount is how many memories of one library and kind are in one
// bucket (Count*), and how many of those hold a redaction marker.
type BucketCount struct {
	Workspace string
	Kind      string
	Bucket    string
	N         int64
	Redacted  int64
}

// bucketCase sorts a memory row into its Count* bucket: a quarantined one
// is quarantined whatever else it is; a lesson's state comes next; a plain
// memory invalidated with a successor was superseded, without one forgotten.
const bucketCase = `case when quarantined then '` + CountQuarantined + `'
	when state = '` + StateDeprecated + `' then '` + CountDeprecated + `'
	when state = '` + StateSuperseded + `' or (invalid_at is not null and superseded_by <> 0) then '` + CountSuperseded + `'
	when invalid_at is not null or state <> '` + StateActive + `' then '` + CountInvalidated + `'
	else '` + CountLive + `' end`

// LibraryCounts counts the memories of some libraries ("" is the global
// one) by library, kind and bucket, in one statement.
func (s *Store) LibraryCounts(ctx context.Context, q querier, workspaces []string) ([]BucketCount, error) {
	if len(workspaces) == 0 {
		return nil, nil
	}
	where, args := inList("workspace", workspaces)
	args = append(args, redactionMarker)
	rows, err := q.QueryContext(ctx, `select workspace, kind, `+bucketCase+` as bucket, count(*),
		sum(case when text like $`+fmt.Sprint(len(args))+` then 1 else 0 end)
		from memories where `+where+` group by workspace, kind, bucket order by workspace, kind, bucket`, args...)
	if err != nil {
		return nil, fmt.Errorf("count library memories: %w", err)
	}
	defer rows.Close()
	var out []BucketCount
	for rows.Next() {
		var c BucketCount
		if err := rows.Scan(&c.Workspace, &c.Kind, &c.Bucket, &c.N, &c.Redacted); err != nil {
			return nil, fmt.Errorf("count library memories: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// LibraryTimes are the last times something happened to a library.
type LibraryTimes struct {
	// LastRetro is the last retro applied in the workspace; for the global
	// library, the last one anywhere (every retro may promote into it, and
	// under scope global writes it).
	LastRetro time.Time
	// LastConsolidation is when its last consolidation finished.
	LastConsolidation time.Time
	// LastError is its last failed LLM call (a retro's, a consolidation's…).
	LastError time.Time
}

// LibraryTimesOf reads the last retro, consolidation and failed LLM call
// of a workspace and of the global library, in one statement.
func (s *Store) LibraryTimesOf(ctx context.Context, q querier, workspace string) (ws, global LibraryTimes, err error) {
	failed := "outcome not in ('ok', '" + LLMCallRunning + "')"
	var v [6]any
	dest := make([]any, len(v))
	for i := range v {
		dest[i] = &v[i]
	}
	err = q.QueryRowContext(ctx, `select
		(select max(applied_at) from retro_runs where workspace = $1),
		(select max(applied_at) from retro_runs),
		(select max(last_finished_at) from consolidate_state where workspace = $1),
		(select max(last_finished_at) from consolidate_state where workspace = ''),
		(select max(created_at) from llm_calls where workspace = $1 and `+failed+`),
		(select max(created_at) from llm_calls where workspace = '' and `+failed+`)`, workspace).Scan(dest...)
	if err != nil {
		return ws, global, fmt.Errorf("read library times of %q: %w", workspace, err)
	}
	var t [6]time.Time
	for i := range v {
		if t[i], err = aggregateTime(v[i]); err != nil {
			return ws, global, fmt.Errorf("read library times of %q: %w", workspace, err)
		}
	}
	return LibraryTimes{t[0], t[2], t[4]}, LibraryTimes{t[1], t[3], t[5]}, nil
}

// MemoriesOverlapping lists the live memories of some libraries whose
// normalized text contains norm or is contained in it (norm is already
// normalized, learn/memory.Normalize): the candidates of the seed's
// forget rule (memory.Matches), which the caller applies. Newest first.
func (s *Store) MemoriesOverlapping(ctx context.Context, q querier, workspaces []string, norm string) ([]Memory, error) {
	if norm == "" || len(workspaces) == 0 {
		return nil, nil
	}
	where, args := memoryWhere(workspaces, true)
	args = append(args, norm)
	n := fmt.Sprint(len(args))
	test := "(instr(text_norm, $" + n + ") > 0 or instr($" + n + ", text_norm) > 0)"
	if s.Dialect == Postgres {
		test = "(strpos(text_norm, $" + n + ") > 0 or strpos($" + n + ", text_norm) > 0)"
	}
	return s.queryMemories(ctx, q, `select `+memoryColumns+` from memories where `+where+` and text_norm <> '' and `+test+
		` order by id desc`, args...)
}

// LastRetroOf is when a retro of the session was last applied; zero when
// none was.
func (s *Store) LastRetroOf(ctx context.Context, q querier, sessionID string) (time.Time, error) {
	var v any
	if err := q.QueryRowContext(ctx, `select max(applied_at) from retro_runs where session_id = $1`, sessionID).Scan(&v); err != nil {
		return time.Time{}, fmt.Errorf("read last retro of session %s: %w", sessionID, err)
	}
	return aggregateTime(v)
}

// retroKinds are the job kinds that retro a session.
var retroKinds = []string{"retro_session", "retro_error"}

// WaitingRetro finds a retro job of the session that has not finished
// (available, scheduled, pending, retryable or running): its id and
// state, ok false when there is none. River keeps the session in the job's
// args, so the test is the dialect's JSON extraction.
func (s *Store) WaitingRetro(ctx context.Context, q querier, sessionID string) (id int64, state string, ok bool, err error) {
	arg := "args->>'session_id'"
	if s.Dialect == SQLite {
		arg = "json_extract(args, '$.session_id')"
	}
	kinds, args := inList("kind", retroKinds)
	args = append(args, sessionID)
	err = q.QueryRowContext(ctx, `select id, state from river_job where `+kinds+` and `+arg+` = $`+fmt.Sprint(len(args))+
		` and state in ('available', 'scheduled', 'pending', 'retryable', 'running') order by id limit 1`, args...).Scan(&id, &state)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, "", false, nil
		}
		return 0, "", false, fmt.Errorf("find a waiting retro of session %s: %w", sessionID, err)
	}
	return id, state, true, nil
}
