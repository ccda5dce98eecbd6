package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mullhq/mull/events"
)

// OverheadFilter narrows what the overhead report reads. Zero fields match
// everything.
type OverheadFilter struct {
	Workspace    string
	Since, Until time.Time
	// SessionID narrows AgentUsages to one session (SumLearningSpend
	// ignores it: calls are recorded per workspace).
	SessionID string
}

func (f OverheadFilter) where(timeCol string, args []any) (string, []any) {
	var conds []string
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	if f.Workspace != "" {
		add("workspace = $%d", f.Workspace)
	}
	if !f.Since.IsZero() {
		add(timeCol+" >= $%d", utcMicro(f.Since))
	}
	if !f.Until.IsZero() {
		add(timeCol+" < $%d", utcMicro(f.Until))
	}
	if len(conds) == 0 {
		return "", args
	}
	return strings.Join(conds, " and "), args
}

// AgentUsage is one of the agent's usage events (one model response of a
// DSH step), as the overhead report prices it.
type AgentUsage struct {
	Workspace string
	SessionID string
	Time      time.Time
	events.UsagePayload
}

// AgentUsages lists the agent's usage events in a window, oldest first.
// Each is priced at its own time (peak and off-peak differ), so they are
// read one by one rather than summed here.
func (s *Store) AgentUsages(ctx context.Context, f OverheadFilter) ([]AgentUsage, error) {
	where, args := f.where("time", []any{string(events.Usage)})
	if f.SessionID != "" {
		args = append(args, f.SessionID)
		where = strings.TrimPrefix(where+fmt.Sprintf(" and session_id = $%d", len(args)), " and ")
	}
	q := `select workspace, session_id, time, payload from events where type = $1`
	if where != "" {
		q += " and " + where
	}
	rows, err := s.readDB().QueryContext(ctx, q+` order by time, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list usage events: %w", err)
	}
	defer rows.Close()
	var out []AgentUsage
	for rows.Next() {
		var u AgentUsage
		var payload string
		if err := rows.Scan(&u.Workspace, &u.SessionID, &u.Time, &payload); err != nil {
			return nil, fmt.Errorf("list usage events: %w", err)
		}
		if err := json.Unmarshal([]byte(payload), &u.UsagePayload); err != nil {
			return nil, fmt.Errorf("usage event of session %s at %s: bad payload: %w", u.SessionID, u.Time, err)
		}
		u.Time = u.Time.UTC()
		out = append(out, u)
	}
	return out, rows.Err()
}

// CountAgentUsages counts the agent's usage events in a window (f's
// Workspace and SessionID too). Events are only ever added, with their
// time as the agent logged it, so a window's count changes exactly when
// an event lands in it: the overview keeps its past days' priced usage
// while their count stays the same. It reads the events_type_time index
// alone.
func (s *Store) CountAgentUsages(ctx context.Context, f OverheadFilter) (int64, error) {
	where, args := f.where("time", []any{string(events.Usage)})
	if f.SessionID != "" {
		args = append(args, f.SessionID)
		where = strings.TrimPrefix(where+fmt.Sprintf(" and session_id = $%d", len(args)), " and ")
	}
	q := `select count(*) from events where type = $1`
	if where != "" {
		q += " and " + where
	}
	var n int64
	if err := s.readDB().QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count usage events: %w", err)
	}
	return n, nil
}

// LearningSpend sums mull's own LLM calls of one workspace, UTC day and job
// kind: what its learning cost.
type LearningSpend struct {
	Workspace        string
	Day              string
	Kind             string
	Calls            int64
	PromptTokens     int64
	CacheHitTokens   int64
	CompletionTokens int64
	CostNanoUSD      int64
}

// SumLearningSpend totals mull's LLM call records by workspace, UTC day and
// kind, ordered so. Running and lost calls count as calls but, their usage
// being unknown, add no tokens (their rows hold zeros).
func (s *Store) SumLearningSpend(ctx context.Context, f OverheadFilter) ([]LearningSpend, error) {
	day := "substr(cast(created_at as text), 1, 10)"
	if s.Dialect == Postgres {
		day = "to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')"
	}
	where, args := f.where("created_at", nil)
	if where != "" {
		where = " where " + where
	}
	rows, err := s.readDB().QueryContext(ctx, `select workspace, `+day+` as d, kind, count(*), coalesce(sum(prompt_tokens), 0),
		coalesce(sum(cache_hit_tokens), 0), coalesce(sum(completion_tokens), 0), coalesce(sum(cost_nano_usd), 0)
		from llm_calls`+where+` group by workspace, d, kind order by workspace, d, kind`, args...)
	if err != nil {
		return nil, fmt.Errorf("sum learning spend: %w", err)
	}
	defer rows.Close()
	var out []LearningSpend
	for rows.Next() {
		var r LearningSpend
		if err := rows.Scan(&r.Workspace, &r.Day, &r.Kind, &r.Calls, &r.PromptTokens, &r.CacheHitTokens,
			&r.CompletionTokens, &r.CostNanoUSD); err != nil {
			return nil, fmt.Errorf("sum learning spend: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
