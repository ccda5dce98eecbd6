package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// LLMCall is the record of one call to the model.
type LLMCall struct {
	ID               string `json:"id"`
	JobID            int64  `json:"job_id"`
	Kind             string `json:"kind"`
	Workspace        string `json:"workspace"`
	Model            string `json:"model"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	CacheHitTokens   int64  `json:"cache_hit_tokens"`
	CacheMissTokens  int64  `json:"cache_miss_tokens"`
	CostNanoUSD      int64  `json:"cost_nano_usd"`
	LatencyMS        int64  `json:"latency_ms"`
	// Outcome is "ok", the error class (retryable, permanent, pause,
	// budget, invalid), LLMCallRunning while the request is in flight, or
	// LLMCallLost when its worker stopped before it returned.
	Outcome     string    `json:"outcome"`
	ErrorReason string    `json:"error_reason,omitempty"`
	Error       string    `json:"error,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// Messages are the request's messages, kept for llm.keep_prompts with
	// credentials redacted. Only GetLLMCall reads them back; nil when they
	// were not kept or have been pruned.
	Messages []LLMMessage `json:"messages,omitempty"`
	// Response is the model's answer, kept as Messages are (llm.keep_prompts,
	// credentials redacted, pruned with them). Only GetLLMCall reads it
	// back; nil when it was not kept, has been pruned, or none came.
	Response *LLMResponse `json:"response,omitempty"`
}

// LLMResponse is the model's answer of a call record: the assistant
// message's content and, when thinking was on, its reasoning_content.
type LLMResponse struct {
	Content   string `json:"content"`
	Reasoning string `json:"reasoning_content,omitempty"`
}

// LLMMessage is one request message of a call record.
type LLMMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// LLMCallDetail is a call record shown alone (`mull llm calls show`, GET
// /v1/admin/llm/calls/{id}): its messages always present, empty when none
// were kept or they were pruned, so a reader can tell.
type LLMCallDetail struct {
	LLMCall
	Messages []LLMMessage `json:"messages"`
	// Response is null when no answer was kept.
	Response *LLMResponse `json:"response"`
}

// Detail is the call as shown alone.
func (c LLMCall) Detail() LLMCallDetail {
	m := c.Messages
	if m == nil {
		m = []LLMMessage{}
	}
	return LLMCallDetail{LLMCall: c, Messages: m, Response: c.Response}
}

// messagesText is how a call's messages are stored: JSON, or "" for none.
func messagesText(m []LLMMessage) string {
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m) // strings only
	return string(b)
}

// responseText is how a call's answer is stored: JSON, or "" for none.
func responseText(r *LLMResponse) string {
	if r == nil || (r.Content == "" && r.Reasoning == "") {
		return ""
	}
	b, _ := json.Marshal(r) // strings only
	return string(b)
}

// Outcomes of a call that has not returned. A running record is written
// before the request goes out and finished when it returns; one still running
// past the call's deadline belongs to a worker that died, and the budget
// sweep marks it lost: DeepSeek may have billed it, but its usage is unknown.
const (
	LLMCallRunning = "running"
	LLMCallLost    = "lost"
)

// LostLLMCallReason and LostLLMCallError are a lost call's error_reason and
// error.
const (
	LostLLMCallReason = "worker_died"
	LostLLMCallError  = "the worker stopped before the call returned; its usage is unknown"
)

// StartLLMCall records a call as it goes out, with outcome LLMCallRunning.
// It fills in c's ID (when empty), Outcome and CreatedAt (when zero) before
// writing, so the caller can finish the same record even when this write
// fails.
func (s *Store) StartLLMCall(ctx context.Context, c *LLMCall) error {
	if c.ID == "" {
		c.ID = newID("call_")
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = s.Now()
	}
	c.Outcome = LLMCallRunning
	return s.InsertLLMCall(ctx, *c)
}

// FinishLLMCall writes a call's final record over its running one: usage,
// cost, latency, outcome and error. When there is no row to finish (the start
// write failed, or the call never started), it inserts the whole record, so
// a failed first write never loses a call. An empty ID is generated.
func (s *Store) FinishLLMCall(ctx context.Context, c LLMCall) error {
	if c.ID == "" {
		c.ID = newID("call_")
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = s.Now()
	}
	_, err := s.DB.ExecContext(ctx, `insert into llm_calls (id, job_id, kind, workspace, model, prompt_tokens,
		completion_tokens, cache_hit_tokens, cache_miss_tokens, cost_nano_usd, latency_ms, outcome, error_reason, error, created_at, messages, response)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
		on conflict (id) do update set prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens,
		cache_hit_tokens = excluded.cache_hit_tokens, cache_miss_tokens = excluded.cache_miss_tokens,
		cost_nano_usd = excluded.cost_nano_usd, latency_ms = excluded.latency_ms, outcome = excluded.outcome,
		error_reason = excluded.error_reason, error = excluded.error, response = excluded.response`,
		c.ID, c.JobID, c.Kind, c.Workspace, c.Model, c.PromptTokens, c.CompletionTokens, c.CacheHitTokens,
		c.CacheMissTokens, c.CostNanoUSD, c.LatencyMS, c.Outcome, c.ErrorReason, c.Error, utcMicro(c.CreatedAt), messagesText(c.Messages), responseText(c.Response))
	if err != nil {
		return fmt.Errorf("finish llm call %s: %w", c.ID, err)
	}
	return nil
}

// MarkLostLLMCalls marks LLMCallLost every call still running that started
// before the given time, and returns how many it marked. Pass a time before
// which no live call can have started (now minus the call deadline and a
// margin). A call that returns after all finishes its record over the mark.
func (s *Store) MarkLostLLMCalls(ctx context.Context, before time.Time) (int, error) {
	res, err := s.DB.ExecContext(ctx, `update llm_calls set outcome = $1, error_reason = $2, error = $3
		where outcome = $4 and created_at < $5`,
		LLMCallLost, LostLLMCallReason, LostLLMCallError, LLMCallRunning, before.UTC())
	if err != nil {
		return 0, fmt.Errorf("mark lost llm calls: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("mark lost llm calls: %w", err)
	}
	return int(n), nil
}

// InsertLLMCall records a call; an empty ID is generated.
func (s *Store) InsertLLMCall(ctx context.Context, c LLMCall) error {
	if c.ID == "" {
		c.ID = newID("call_")
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = s.Now()
	}
	_, err := s.DB.ExecContext(ctx, `insert into llm_calls (id, job_id, kind, workspace, model, prompt_tokens,
		completion_tokens, cache_hit_tokens, cache_miss_tokens, cost_nano_usd, latency_ms, outcome, error_reason, error, created_at, messages, response)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		c.ID, c.JobID, c.Kind, c.Workspace, c.Model, c.PromptTokens, c.CompletionTokens, c.CacheHitTokens,
		c.CacheMissTokens, c.CostNanoUSD, c.LatencyMS, c.Outcome, c.ErrorReason, c.Error, utcMicro(c.CreatedAt), messagesText(c.Messages), responseText(c.Response))
	if err != nil {
		return fmt.Errorf("record llm call: %w", err)
	}
	return nil
}

// LLMCallFilter narrows ListLLMCalls and SumLLMCalls. Zero fields match all.
type LLMCallFilter struct {
	JobID     int64
	Kind      string
	Workspace string
	Since     time.Time
	Until     time.Time
	// BenchRunID keeps the calls of a benchmark run's jobs: those its
	// progress sums (BenchRunsProgress).
	BenchRunID string
	// Limit caps the rows ListLLMCalls returns; Offset skips rows first.
	Limit, Offset int
}

func (f LLMCallFilter) where() (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	if f.JobID != 0 {
		add("job_id = $%d", f.JobID)
	}
	if f.Kind != "" {
		add("kind = $%d", f.Kind)
	}
	if f.Workspace != "" {
		add("workspace = $%d", f.Workspace)
	}
	if !f.Since.IsZero() {
		add("created_at >= $%d", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		add("created_at < $%d", f.Until.UTC())
	}
	if f.BenchRunID != "" {
		args = append(args, f.BenchRunID)
		run := "r.id = $" + strconv.Itoa(len(args))
		conds = append(conds, "job_id in (select job_id from ("+benchRunJobs(run)+") j)")
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " where " + strings.Join(conds, " and "), args
}

// ListLLMCalls returns call records, newest first: f.Limit of them (100
// when 0, at most 10000) after skipping f.Offset.
func (s *Store) ListLLMCalls(ctx context.Context, f LLMCallFilter) ([]LLMCall, error) {
	return s.listLLMCalls(ctx, f, 10000)
}

// listLLMCalls is ListLLMCalls with its limit capped at most (over it, or
// 0: 100).
func (s *Store) listLLMCalls(ctx context.Context, f LLMCallFilter, most int) ([]LLMCall, error) {
	if f.Offset < 0 {
		return nil, fmt.Errorf("list llm calls: offset %d is negative", f.Offset)
	}
	limit := f.Limit
	if limit <= 0 || limit > most {
		limit = 100
	}
	where, args := f.where()
	args = append(args, limit, f.Offset)
	out, err := queryAll(ctx, s.DB, scanLLMCall, `select id, job_id, kind, workspace, model, prompt_tokens, completion_tokens,
		cache_hit_tokens, cache_miss_tokens, cost_nano_usd, latency_ms, outcome, error_reason, error, created_at
		from llm_calls`+where+` order by created_at desc, id limit $`+strconv.Itoa(len(args)-1)+` offset $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list llm calls: %w", err)
	}
	return out, nil
}

// scanLLMCall reads a call record without its messages and answer.
func scanLLMCall(r scanner) (LLMCall, error) {
	var c LLMCall
	err := r.Scan(&c.ID, &c.JobID, &c.Kind, &c.Workspace, &c.Model, &c.PromptTokens, &c.CompletionTokens,
		&c.CacheHitTokens, &c.CacheMissTokens, &c.CostNanoUSD, &c.LatencyMS, &c.Outcome, &c.ErrorReason, &c.Error, &c.CreatedAt)
	c.CreatedAt = c.CreatedAt.UTC()
	return c, err
}

// ErrNoLLMCall is GetLLMCall's error for an id no record has.
var ErrNoLLMCall = errors.New("no such llm call")

// GetLLMCall reads one call record with its kept messages and answer.
func (s *Store) GetLLMCall(ctx context.Context, id string) (LLMCall, error) {
	var c LLMCall
	var msgs, resp string
	err := s.DB.QueryRowContext(ctx, `select id, job_id, kind, workspace, model, prompt_tokens, completion_tokens,
		cache_hit_tokens, cache_miss_tokens, cost_nano_usd, latency_ms, outcome, error_reason, error, created_at, messages, response
		from llm_calls where id = $1`, id).Scan(&c.ID, &c.JobID, &c.Kind, &c.Workspace, &c.Model, &c.PromptTokens,
		&c.CompletionTokens, &c.CacheHitTokens, &c.CacheMissTokens, &c.CostNanoUSD, &c.LatencyMS, &c.Outcome,
		&c.ErrorReason, &c.Error, &c.CreatedAt, &msgs, &resp)
	if errors.Is(err, sql.ErrNoRows) {
		return LLMCall{}, fmt.Errorf("llm call %q: %w", id, ErrNoLLMCall)
	}
	if err != nil {
		return LLMCall{}, fmt.Errorf("get llm call %s: %w", id, err)
	}
	c.CreatedAt = c.CreatedAt.UTC()
	if msgs != "" {
		if err := json.Unmarshal([]byte(msgs), &c.Messages); err != nil {
			return LLMCall{}, fmt.Errorf("llm call %s: stored messages: %w", id, err)
		}
	}
	if resp != "" {
		c.Response = &LLMResponse{}
		if err := json.Unmarshal([]byte(resp), c.Response); err != nil {
			return LLMCall{}, fmt.Errorf("llm call %s: stored response: %w", id, err)
		}
	}
	return c, nil
}

// PruneLLMPrompts forgets the messages and the answer of calls made before
// the given time (now minus llm.keep_prompts) and returns how many it
// pruned. The rest of each record stays.
func (s *Store) PruneLLMPrompts(ctx context.Context, before time.Time) (int, error) {
	res, err := s.DB.ExecContext(ctx, `update llm_calls set messages = '', response = ''
		where (messages <> '' or response <> '') and created_at < $1`, utcMicro(before))
	if err != nil {
		return 0, fmt.Errorf("prune llm prompts: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune llm prompts: %w", err)
	}
	return int(n), nil
}

// LLMUsageRow sums calls by one grouping: job, workspace, kind or day.
// Calls counts every record, running ones included; Failed counts those that
// ended in an error or were lost. A running or lost call adds no tokens or
// cost: its usage is unknown.
type LLMUsageRow struct {
	Group            string `json:"group"`
	Calls            int64  `json:"calls"`
	Failed           int64  `json:"failed"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	CacheHitTokens   int64  `json:"cache_hit_tokens"`
	CostNanoUSD      int64  `json:"cost_nano_usd"`
}

// SumLLMCalls totals call records grouped by "job", "workspace", "kind" or
// "day" (UTC).
func (s *Store) SumLLMCalls(ctx context.Context, by string, f LLMCallFilter) ([]LLMUsageRow, error) {
	var group string
	switch by {
	case "job":
		group = "cast(job_id as text)"
	case "workspace":
		group = "workspace"
	case "kind":
		group = "kind"
	case "day":
		group = "substr(cast(created_at as text), 1, 10)"
		if s.Dialect == Postgres {
			group = "to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')"
		}
	default:
		return nil, fmt.Errorf("group by %q: want job, workspace, kind or day", by)
	}
	where, args := f.where()
	out, err := queryAll(ctx, s.DB, func(sc scanner) (LLMUsageRow, error) {
		var r LLMUsageRow
		return r, sc.Scan(&r.Group, &r.Calls, &r.Failed, &r.PromptTokens, &r.CompletionTokens, &r.CacheHitTokens, &r.CostNanoUSD)
	}, `select `+group+` as g, count(*),
		sum(case when outcome in ('ok', 'running') then 0 else 1 end), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
		coalesce(sum(cache_hit_tokens), 0), coalesce(sum(cost_nano_usd), 0)
		from llm_calls`+where+` group by g order by g`, args...)
	if err != nil {
		return nil, fmt.Errorf("sum llm calls: %w", err)
	}
	return out, nil
}

// newID makes a random id with a prefix.
func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// LLMCallCount is calls of one kind and outcome since a time.
type LLMCallCount struct {
	Kind, Outcome                 string
	Calls, PromptTokens, CacheHit int64
	CompletionTokens, CostNanoUSD int64
}

// CountLLMCalls totals calls by kind and outcome since a time, for metrics.
func (s *Store) CountLLMCalls(ctx context.Context, since time.Time) ([]LLMCallCount, error) {
	out, err := queryAll(ctx, s.DB, func(sc scanner) (LLMCallCount, error) {
		var c LLMCallCount
		return c, sc.Scan(&c.Kind, &c.Outcome, &c.Calls, &c.PromptTokens, &c.CacheHit, &c.CompletionTokens, &c.CostNanoUSD)
	}, `select kind, outcome, count(*), coalesce(sum(prompt_tokens), 0),
		coalesce(sum(cache_hit_tokens), 0), coalesce(sum(completion_tokens), 0), coalesce(sum(cost_nano_usd), 0)
		from llm_calls where created_at >= $1 group by kind, outcome order by kind, outcome`, since.UTC())
	if err != nil {
		return nil, fmt.Errorf("count llm calls: %w", err)
	}
	return out, nil
}
