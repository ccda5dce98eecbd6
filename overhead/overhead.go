// Package overhead answers the first question a user asks of a learning
// worker: what does it cost next to the work it learns from? It sets the
// agent's own token usage (the usage events DSH logs, priced with mull's
// DeepSeek price table) beside mull's LLM calls (retro, consolidate and
// every later kind), per workspace and UTC day. The CLI (mull report
// overhead), the admin API and the metrics all build the same Report here.
package overhead

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mullhq/mull/dlq"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
)

// Filter narrows a report. Zero fields match everything.
type Filter struct {
	Workspace string
	Since     time.Time
	Until     time.Time
}

// Agent is the agent's side: its model responses and what they cost.
type Agent struct {
	// Steps are usage events, one per model response.
	Steps int64 `json:"steps"`
	// PromptTokens are all prompt tokens, CacheHitTokens the part the
	// provider's prefix cache served (billed at the cache-hit price).
	PromptTokens    int64 `json:"prompt_tokens"`
	CacheHitTokens  int64 `json:"cache_hit_tokens"`
	OutputTokens    int64 `json:"output_tokens"`
	ReasoningTokens int64 `json:"reasoning_tokens"`
	CostNanoUSD     int64 `json:"cost_nano_usd"`
	// UnpricedSteps name no model the price table has (llm.prices): they
	// add tokens but no cost, so the ratio overstates mull's share.
	UnpricedSteps int64 `json:"unpriced_steps,omitempty"`
}

// Mull is mull's side: its own LLM calls for the workspace.
type Mull struct {
	Calls            int64 `json:"calls"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CacheHitTokens   int64 `json:"cache_hit_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CostNanoUSD      int64 `json:"cost_nano_usd"`
	// CostByKind splits CostNanoUSD by job kind (retro_session, consolidate…).
	CostByKind map[string]int64 `json:"cost_nano_usd_by_kind"`
}

// Row is one workspace's day (Day "": every day of the report).
type Row struct {
	Workspace string `json:"workspace"`
	Day       string `json:"day,omitempty"`
	Agent     Agent  `json:"agent"`
	Mull      Mull   `json:"mull"`
	// Ratio is mull's cost over the agent's; nil when the agent cost nothing.
	Ratio *float64 `json:"ratio"`
	// MullCacheHitShare is the part of mull's prompt tokens the cache
	// served; nil without prompt tokens.
	MullCacheHitShare *float64 `json:"mull_cache_hit_share"`
}

// Report is the overhead per workspace and day, per workspace, and in all.
type Report struct {
	Since      *time.Time `json:"since,omitempty"`
	Until      *time.Time `json:"until,omitempty"`
	Days       []Row      `json:"days"`
	Workspaces []Row      `json:"workspaces"`
	Total      Row        `json:"total"`
}

// Build reads both sides from the store and prices the agent's.
func Build(ctx context.Context, s *store.Store, pricing llm.Pricing, f Filter) (Report, error) {
	sf := store.OverheadFilter{Workspace: f.Workspace, Since: f.Since, Until: f.Until}
	usages, err := s.AgentUsages(ctx, sf)
	if err != nil {
		return Report{}, err
	}
	spend, err := s.SumLearningSpend(ctx, sf)
	if err != nil {
		return Report{}, err
	}
	r := Assemble(pricing, usages, spend)
	if !f.Since.IsZero() {
		r.Since = &f.Since
	}
	if !f.Until.IsZero() {
		r.Until = &f.Until
	}
	return r, nil
}

// ForSession is one session's agent usage, priced: what `mull sessions
// show` and GET /v1/sessions/ID report.
func ForSession(ctx context.Context, s *store.Store, pricing llm.Pricing, sessionID string) (Agent, error) {
	usages, err := s.AgentUsages(ctx, store.OverheadFilter{SessionID: sessionID})
	if err != nil {
		return Agent{}, err
	}
	var a Agent
	for _, u := range usages {
		addAgent(&a, pricing, u)
	}
	return a, nil
}

// Assemble groups priced usage and summed spend into a Report.
func Assemble(pricing llm.Pricing, usages []store.AgentUsage, spend []store.LearningSpend) Report {
	return AssemblePriced(pricing, nil, usages, spend)
}

// AssemblePriced is Assemble with part of the agent's usage priced
// already: priced are rows of an earlier Assemble's Days (their Agent
// side is added; their Mull side must be empty), for a caller that keeps
// the usage of days that no longer change. The result is what Assemble
// gives for all the usage events at once.
func AssemblePriced(pricing llm.Pricing, priced []Row, usages []store.AgentUsage, spend []store.LearningSpend) Report {
	type key struct{ ws, day string }
	rows := map[key]*Row{}
	row := func(ws, day string) *Row {
		k := key{ws, day}
		if rows[k] == nil {
			rows[k] = &Row{Workspace: ws, Day: day, Mull: Mull{CostByKind: map[string]int64{}}}
		}
		return rows[k]
	}
	for _, p := range priced {
		merge(row(p.Workspace, p.Day), &Row{Agent: p.Agent})
	}
	for _, u := range usages {
		addAgent(&row(u.Workspace, u.Time.UTC().Format(time.DateOnly)).Agent, pricing, u)
	}
	for _, sp := range spend {
		addMull(&row(sp.Workspace, sp.Day).Mull, sp)
	}
	var r Report
	byWS := map[string]*Row{}
	r.Total = Row{Mull: Mull{CostByKind: map[string]int64{}}}
	for _, d := range rows {
		w := byWS[d.Workspace]
		if w == nil {
			w = &Row{Workspace: d.Workspace, Mull: Mull{CostByKind: map[string]int64{}}}
			byWS[d.Workspace] = w
		}
		merge(w, d)
		merge(&r.Total, d)
		r.Days = append(r.Days, finish(*d))
	}
	for _, w := range byWS {
		r.Workspaces = append(r.Workspaces, finish(*w))
	}
	r.Total = finish(r.Total)
	slices.SortFunc(r.Days, func(a, b Row) int { return cmp.Or(cmp.Compare(a.Workspace, b.Workspace), cmp.Compare(a.Day, b.Day)) })
	slices.SortFunc(r.Workspaces, func(a, b Row) int { return cmp.Compare(a.Workspace, b.Workspace) })
	r.Days, r.Workspaces = nonNil(r.Days), nonNil(r.Workspaces)
	return r
}

// addAgent prices one usage event at its own time: DSH's inputTokens are
// the cache misses, cacheReadTokens the hits.
func addAgent(a *Agent, pricing llm.Pricing, u store.AgentUsage) {
	a.Steps++
	a.PromptTokens += u.InputTokens + u.CacheReadTokens
	a.CacheHitTokens += u.CacheReadTokens
	a.OutputTokens += u.OutputTokens
	if u.ReasoningTokens != nil {
		a.ReasoningTokens += *u.ReasoningTokens
	}
	if !pricing.Known(u.Model) {
		a.UnpricedSteps++
		return
	}
	a.CostNanoUSD += pricing.Cost(u.Model, u.Time, llm.Usage{
		PromptTokens: u.InputTokens + u.CacheReadTokens, CompletionTokens: u.OutputTokens,
		CacheHitTokens: u.CacheReadTokens, CacheMissTokens: u.InputTokens,
	})
}

func addMull(m *Mull, sp store.LearningSpend) {
	m.Calls += sp.Calls
	m.PromptTokens += sp.PromptTokens
	m.CacheHitTokens += sp.CacheHitTokens
	m.CompletionTokens += sp.CompletionTokens
	m.CostNanoUSD += sp.CostNanoUSD
	m.CostByKind[sp.Kind] += sp.CostNanoUSD
}

func merge(into, r *Row) {
	a, b := &into.Agent, r.Agent
	a.Steps += b.Steps
	a.PromptTokens += b.PromptTokens
	a.CacheHitTokens += b.CacheHitTokens
	a.OutputTokens += b.OutputTokens
	a.ReasoningTokens += b.ReasoningTokens
	a.CostNanoUSD += b.CostNanoUSD
	a.UnpricedSteps += b.UnpricedSteps
	m := &into.Mull
	m.Calls += r.Mull.Calls
	m.PromptTokens += r.Mull.PromptTokens
	m.CacheHitTokens += r.Mull.CacheHitTokens
	m.CompletionTokens += r.Mull.CompletionTokens
	m.CostNanoUSD += r.Mull.CostNanoUSD
	for k, v := range r.Mull.CostByKind {
		m.CostByKind[k] += v
	}
}

// finish fills in a row's ratios.
func finish(r Row) Row {
	r.Ratio = share(r.Mull.CostNanoUSD, r.Agent.CostNanoUSD)
	r.MullCacheHitShare = share(r.Mull.CacheHitTokens, r.Mull.PromptTokens)
	return r
}

func share(part, whole int64) *float64 {
	if whole <= 0 {
		return nil
	}
	v := float64(part) / float64(whole)
	return &v
}

func nonNil(rows []Row) []Row {
	if rows == nil {
		return []Row{}
	}
	return rows
}

// ParseSince reads a report's start: a UTC day (2026-11-29), an RFC 3339
// time, or a duration back from now (24h, 7d).
func ParseSince(v string, now time.Time) (time.Time, error) {
	if d, err := time.Parse(time.DateOnly, v); err == nil {
		return d, nil
	}
	t, err := dlq.ParseSince(v, now)
	if err != nil {
		return t, fmt.Errorf("want a day (2026-11-29), an RFC 3339 time or a duration such as 7d: %w", errors.Unwrap(err))
	}
	return t, nil
}
