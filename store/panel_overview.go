package store

import (
	"context"
	"fmt"
)

// LLMCallPage lists call records for the panel's /llm page: f's filter
// (f.Limit rows, at most 1000), after skipping offset rows, newest first.
// ListLLMCalls has no offset: the panel pages through what it shows.
func (s *Store) LLMCallPage(ctx context.Context, f LLMCallFilter, offset int) ([]LLMCall, error) {
	if offset < 0 {
		return nil, fmt.Errorf("list llm calls: offset %d is negative", offset)
	}
	limit := f.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	where, args := f.where()
	rows, err := s.DB.QueryContext(ctx, `select id, job_id, kind, workspace, model, prompt_tokens, completion_tokens,
		cache_hit_tokens, cache_miss_tokens, cost_nano_usd, latency_ms, outcome, error_reason, error, created_at
		from llm_calls`+where+fmt.Sprintf(" order by created_at desc, id limit %d offset %d", limit, offset), args...)
	if err != nil {
		return nil, fmt.Errorf("list llm calls: %w", err)
	}
	defer rows.Close()
	var out []LLMCall
	for rows.Next() {
		var c LLMCall
		if err := rows.Scan(&c.ID, &c.JobID, &c.Kind, &c.Workspace, &c.Model, &c.PromptTokens, &c.CompletionTokens,
			&c.CacheHitTokens, &c.CacheMissTokens, &c.CostNanoUSD, &c.LatencyMS, &c.Outcome, &c.ErrorReason, &c.Error, &c.CreatedAt); err != nil {
			return nil, fmt.Errorf("list llm calls: %w", err)
		}
		c.CreatedAt = c.CreatedAt.UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}
