package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The panel's reads of sessions, their events and what learning did with
// them (web/sessions.go). Every list is a page: a limit and an offset.

// SessionPage narrows PanelSessions. Empty fields match everything.
type SessionPage struct {
	Workspace string
	Status    string
	// Limit defaults to 50 and is capped at 1000.
	Limit, Offset int
}

// PanelSessions lists a page of sessions, the most recently active first.
func (s *Store) PanelSessions(ctx context.Context, f SessionPage) ([]Session, error) {
	out, err := queryAll(ctx, s.DB, scanSession, `select `+sessionColumns+` from sessions
		where ($1 = '' or workspace = $1) and ($2 = '' or status = $2)
		order by last_event_at desc, id limit $3 offset $4`, f.Workspace, f.Status, clampLimit(f.Limit), max(f.Offset, 0))
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// toolFailed is the condition of a failed tool call's event: a tool_result
// whose payload says is_error.
func (s *Store) toolFailed() string {
	if s.Dialect == Postgres {
		return "type = 'tool_result' and (payload::jsonb ->> 'is_error') = 'true'"
	}
	return "type = 'tool_result' and json_extract(payload, '$.is_error') = 1"
}

// SessionToolFailures counts the failed tool calls of each of ids (a
// session with none has no entry).
func (s *Store) SessionToolFailures(ctx context.Context, ids []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList("session_id", ids)
	type row struct {
		id string
		n  int64
	}
	rows, err := queryAll(ctx, s.DB, func(r scanner) (row, error) {
		var x row
		return x, r.Scan(&x.id, &x.n)
	}, `select session_id, count(*) from events where `+in+` and `+s.toolFailed()+` group by session_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("count tool failures: %w", err)
	}
	for _, r := range rows {
		out[r.id] = r.n
	}
	return out, nil
}

// EventPage narrows PanelEvents: a session's events with From < seq <= To
// (zero To: no upper bound), of Types when given, or only the failures
// (failed tool calls, errors, turns that ended in an error).
type EventPage struct {
	SessionID string
	From, To  int64
	Types     []string
	Failures  bool
	// Limit defaults to 50 and is capped at 1000.
	Limit, Offset int
}

// PanelEvents lists a page of a session's events in the order mull stored
// them (seq), and how many match in all.
func (s *Store) PanelEvents(ctx context.Context, f EventPage) ([]Event, int64, error) {
	where, args := []string{"session_id = $1", "seq > $2"}, []any{f.SessionID, f.From}
	if f.To > 0 {
		args = append(args, f.To)
		where = append(where, "seq <= $"+strconv.Itoa(len(args)))
	}
	if len(f.Types) > 0 {
		ph := make([]string, len(f.Types))
		for i, t := range f.Types {
			args = append(args, t)
			ph[i] = "$" + strconv.Itoa(len(args))
		}
		where = append(where, "type in ("+strings.Join(ph, ", ")+")")
	}
	if f.Failures {
		turnErr := "json_extract(payload, '$.reason') = 'error'"
		if s.Dialect == Postgres {
			turnErr = "(payload::jsonb ->> 'reason') = 'error'"
		}
		where = append(where, "(("+s.toolFailed()+") or type = 'error' or (type = 'turn_end' and "+turnErr+"))")
	}
	cond := strings.Join(where, " and ")
	var total int64
	if err := s.DB.QueryRowContext(ctx, `select count(*) from events where `+cond, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count events of session %s: %w", f.SessionID, err)
	}
	n := len(args)
	out, err := queryEvents(ctx, s.DB, `select `+eventColumns+` from events where `+cond+
		` order by seq, time, id limit $`+strconv.Itoa(n+1)+` offset $`+strconv.Itoa(n+2), append(args, clampLimit(f.Limit), max(f.Offset, 0))...)
	if err != nil {
		return nil, 0, fmt.Errorf("list events of session %s: %w", f.SessionID, err)
	}
	return out, total, nil
}

// SessionRetroRuns lists the retros applied to a session (retro_session
// and retro_error jobs alike), oldest first, at most limit (defaults to 50).
func (s *Store) SessionRetroRuns(ctx context.Context, sessionID string, limit int) ([]RetroRun, error) {
	out, err := queryAll(ctx, s.DB, func(r scanner) (RetroRun, error) {
		var x RetroRun
		err := r.Scan(&x.JobID, &x.SessionID, &x.Workspace, &x.AppliedAt, &x.Counts)
		x.AppliedAt = x.AppliedAt.UTC()
		return x, err
	}, `select job_id, session_id, workspace, applied_at, counts from retro_runs where session_id = $1
		order by applied_at, job_id limit $2`, sessionID, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list retros of session %s: %w", sessionID, err)
	}
	return out, nil
}

// MemoriesOfJobs lists the memories the jobs jobIDs wrote, and those
// superseded by one of them, by id, at most limit (defaults to 50): what
// a retro or a reflection added and what that replaced.
func (s *Store) MemoriesOfJobs(ctx context.Context, jobIDs []int64, limit int) ([]Memory, error) {
	if len(jobIDs) == 0 {
		return nil, nil
	}
	in, args := idList(jobIDs, 0)
	args = append(args, clampLimit(limit))
	out, err := s.queryMemories(ctx, s.DB, `select `+memoryColumns+` from memories where job_id in (`+in+`)
		or superseded_by in (select id from memories where job_id in (`+in+`))
		order by id limit $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("memories of jobs: %w", err)
	}
	return out, nil
}

// LLMCallsOfJobs lists the calls the jobs jobIDs made, oldest first, at
// most limit (defaults to 50).
func (s *Store) LLMCallsOfJobs(ctx context.Context, jobIDs []int64, limit int) ([]LLMCall, error) {
	if len(jobIDs) == 0 {
		return nil, nil
	}
	in, args := idList(jobIDs, 0)
	args = append(args, clampLimit(limit))
	out, err := queryAll(ctx, s.DB, func(r scanner) (LLMCall, error) {
		var c LLMCall
		err := r.Scan(&c.ID, &c.JobID, &c.Kind, &c.Workspace, &c.Model, &c.PromptTokens, &c.CompletionTokens,
			&c.CacheHitTokens, &c.CacheMissTokens, &c.CostNanoUSD, &c.LatencyMS, &c.Outcome, &c.ErrorReason, &c.Error, &c.CreatedAt)
		c.CreatedAt = c.CreatedAt.UTC()
		return c, err
	}, `select id, job_id, kind, workspace, model, prompt_tokens, completion_tokens, cache_hit_tokens, cache_miss_tokens,
		cost_nano_usd, latency_ms, outcome, error_reason, error, created_at from llm_calls where job_id in (`+in+`)
		order by created_at, id limit $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("llm calls of jobs: %w", err)
	}
	return out, nil
}

// WorkspaceSummary is one workspace as the panel lists it: its sessions,
// its library and what mull's own LLM calls for it cost.
type WorkspaceSummary struct {
	Workspace string
	Sessions  int64
	// LastEventAt is its newest session event; zero without sessions.
	LastEventAt time.Time
	// Memories counts the live ones (what may be served); MemoriesAll
	// every row, invalidated and quarantined included.
	Memories, MemoriesAll int64
	LLMCalls              int64
	CostNanoUSD           int64
}

// PanelWorkspaces lists a page of the workspaces that have sessions or
// memories (the global library, workspace "", is not one), the most
// recently active first; only workspace when it is not "".
func (s *Store) PanelWorkspaces(ctx context.Context, workspace string, limit, offset int) ([]WorkspaceSummary, error) {
	out, err := queryAll(ctx, s.DB, func(r scanner) (WorkspaceSummary, error) {
		var w WorkspaceSummary
		var last any
		if err := r.Scan(&w.Workspace, &w.Sessions, &last, &w.Memories, &w.MemoriesAll, &w.LLMCalls, &w.CostNanoUSD); err != nil {
			return w, err
		}
		var err error
		w.LastEventAt, err = aggregateTime(last)
		return w, err
	}, `select w.workspace,
		(select count(*) from sessions s where s.workspace = w.workspace),
		(select max(s.last_event_at) from sessions s where s.workspace = w.workspace) as last,
		(select count(*) from memories m where m.workspace = w.workspace and `+liveCond+`),
		(select count(*) from memories m where m.workspace = w.workspace),
		(select count(*) from llm_calls c where c.workspace = w.workspace),
		(select coalesce(sum(c.cost_nano_usd), 0) from llm_calls c where c.workspace = w.workspace)
		from (select workspace from sessions union select workspace from memories where workspace <> '') w
		where $1 = '' or w.workspace = $1
		order by last desc nulls last, w.workspace limit $2 offset $3`,
		workspace, clampLimit(limit), max(offset, 0))
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	return out, nil
}
