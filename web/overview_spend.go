package web

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/overhead"
	"github.com/mullhq/mull/store"
)

// spendDays is how far back the overview's charts reach, today included.
const spendDays = 30

// spendView is the last 30 UTC days of mull's LLM calls by job kind, set
// beside the agent's own usage as the overhead report prices it (the same
// store reads and overhead.Assemble as `mull report overhead`).
type spendView struct {
	// Since is the first day's start (UTC); Days are oldest first.
	Since time.Time
	Days  []spendDay
	// Kinds are the job kinds with calls, most costly first; each day's
	// Kinds follow this order.
	Kinds []kindSpend
	// Total sums the window for both sides.
	Total overhead.Row
	// Charts are the data-chart specs (mull.js).
	Tokens, Cost, Cache, Overhead chartSpec
}

// spendDay is one UTC day of both sides.
type spendDay struct {
	Day   string
	Kinds []kindSpend
	Mull  kindSpend
	Agent overhead.Agent
	// MullCache and AgentCache are the prompt tokens the cache served,
	// nil without prompts; Ratio is mull's cost over the agent's.
	MullCache, AgentCache, Ratio *float64
}

// kindSpend sums calls of one kind (or of all, Kind "").
type kindSpend struct {
	Kind                            string
	Calls, Tokens, Prompt, CacheHit int64
	CostNanoUSD                     int64
}

// USD is the cost in dollars.
func (k kindSpend) USD() float64 { return budget.USD(k.CostNanoUSD) }

// CacheShare is the part of the prompt tokens the cache served, 0 without.
func (k kindSpend) CacheShare() float64 {
	if k.Prompt == 0 {
		return 0
	}
	return float64(k.CacheHit) / float64(k.Prompt)
}

func (k *kindSpend) add(calls, prompt, cacheHit, completion, cost int64) {
	k.Calls += calls
	k.Prompt += prompt
	k.CacheHit += cacheHit
	k.Tokens += prompt + completion
	k.CostNanoUSD += cost
}

// chartSpec is a data-chart attribute's JSON (see static/mull.js).
type chartSpec struct {
	X       []int64       `json:"x"`
	Series  []chartSeries `json:"series"`
	Unit    string        `json:"unit,omitempty"`
	Stacked bool          `json:"stacked,omitempty"`
	Height  int           `json:"height,omitempty"`
}

type chartSeries struct {
	Label  string     `json:"label"`
	Values []*float64 `json:"values"`
	Unit   string     `json:"unit,omitempty"`
}

func (p *Panel) spend(ctx context.Context) (spendView, error) {
	now := p.deps.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	since := today.AddDate(0, 0, 1-spendDays)
	pricing := llm.NewPricing(p.deps.Config.LLM)
	past, err := p.agents.get(ctx, p.deps.Store, pricing, since, today)
	if err != nil {
		return spendView{}, err
	}
	usages, err := p.deps.Store.AgentUsages(ctx, store.OverheadFilter{Since: today})
	if err != nil {
		return spendView{}, err
	}
	spent, err := p.deps.Store.SumLearningSpend(ctx, store.OverheadFilter{Since: since})
	if err != nil {
		return spendView{}, err
	}
	rep := overhead.AssemblePriced(pricing, past, usages, spent)
	v := spendView{Since: since, Total: rep.Total}
	days := map[string]*spendDay{}
	for i := range spendDays {
		d := since.AddDate(0, 0, i).Format(time.DateOnly)
		v.Days = append(v.Days, spendDay{Day: d})
	}
	for i := range v.Days {
		days[v.Days[i].Day] = &v.Days[i]
	}
	kinds := map[string]*kindSpend{}
	byDayKind := map[[2]string]*kindSpend{}
	for _, s := range spent {
		if kinds[s.Kind] == nil {
			kinds[s.Kind] = &kindSpend{Kind: s.Kind}
		}
		kinds[s.Kind].add(s.Calls, s.PromptTokens, s.CacheHitTokens, s.CompletionTokens, s.CostNanoUSD)
		k := [2]string{s.Day, s.Kind}
		if byDayKind[k] == nil {
			byDayKind[k] = &kindSpend{Kind: s.Kind}
		}
		byDayKind[k].add(s.Calls, s.PromptTokens, s.CacheHitTokens, s.CompletionTokens, s.CostNanoUSD)
		if d := days[s.Day]; d != nil {
			d.Mull.add(s.Calls, s.PromptTokens, s.CacheHitTokens, s.CompletionTokens, s.CostNanoUSD)
		}
	}
	for _, r := range rep.Days {
		if d := days[r.Day]; d != nil {
			addAgent(&d.Agent, r.Agent)
		}
	}
	for _, k := range kinds {
		v.Kinds = append(v.Kinds, *k)
	}
	slices.SortFunc(v.Kinds, func(a, b kindSpend) int {
		return cmp.Or(cmp.Compare(b.CostNanoUSD, a.CostNanoUSD), cmp.Compare(b.Tokens, a.Tokens), cmp.Compare(a.Kind, b.Kind))
	})
	for i := range v.Days {
		d := &v.Days[i]
		for _, k := range v.Kinds {
			ks := kindSpend{Kind: k.Kind}
			if s := byDayKind[[2]string{d.Day, k.Kind}]; s != nil {
				ks = *s
			}
			d.Kinds = append(d.Kinds, ks)
		}
		d.MullCache = share(d.Mull.CacheHit, d.Mull.Prompt)
		d.AgentCache = share(d.Agent.CacheHitTokens, d.Agent.PromptTokens)
		d.Ratio = share(d.Mull.CostNanoUSD, d.Agent.CostNanoUSD)
	}
	v.charts()
	return v, nil
}

func addAgent(into *overhead.Agent, a overhead.Agent) {
	into.Steps += a.Steps
	into.PromptTokens += a.PromptTokens
	into.CacheHitTokens += a.CacheHitTokens
	into.OutputTokens += a.OutputTokens
	into.ReasoningTokens += a.ReasoningTokens
	into.CostNanoUSD += a.CostNanoUSD
	into.UnpricedSteps += a.UnpricedSteps
}

func share(part, whole int64) *float64 {
	if whole <= 0 {
		return nil
	}
	v := float64(part) / float64(whole)
	return &v
}

func ptr(v float64) *float64 { return &v }

// charts builds the four charts from the days.
func (v *spendView) charts() {
	x := make([]int64, len(v.Days))
	for i := range v.Days {
		x[i] = v.Since.AddDate(0, 0, i).Unix()
	}
	series := func(label string, f func(d spendDay) *float64) chartSeries {
		s := chartSeries{Label: label, Values: make([]*float64, len(v.Days))}
		for i, d := range v.Days {
			s.Values[i] = f(d)
		}
		return s
	}
	v.Tokens = chartSpec{X: x, Unit: "tokens", Stacked: true}
	v.Cost = chartSpec{X: x, Unit: "usd", Stacked: true}
	for i, k := range v.Kinds {
		v.Tokens.Series = append(v.Tokens.Series, series(k.Kind, func(d spendDay) *float64 { return ptr(float64(d.Kinds[i].Tokens)) }))
		v.Cost.Series = append(v.Cost.Series, series(k.Kind, func(d spendDay) *float64 { return ptr(d.Kinds[i].USD()) }))
	}
	v.Cache = chartSpec{X: x, Unit: "share", Series: []chartSeries{
		series("mull", func(d spendDay) *float64 { return d.MullCache }),
		series("agent", func(d spendDay) *float64 { return d.AgentCache }),
	}}
	v.Overhead = chartSpec{X: x, Unit: "usd", Series: []chartSeries{
		series("mull", func(d spendDay) *float64 { return ptr(d.Mull.USD()) }),
		series("agent", func(d spendDay) *float64 { return ptr(budget.USD(d.Agent.CostNanoUSD)) }),
	}}
}

// Active are the days with any call or agent step, newest first: the
// tables beside the charts list these.
func (v spendView) Active() []spendDay {
	var out []spendDay
	for i := len(v.Days) - 1; i >= 0; i-- {
		if d := v.Days[i]; d.Mull.Calls > 0 || d.Agent.Steps > 0 {
			out = append(out, d)
		}
	}
	return out
}

// Until is the end of the window (the start of tomorrow, UTC).
func (v spendView) Until() time.Time { return v.Since.AddDate(0, 0, spendDays) }

// MullUSD and AgentUSD are the window's costs in dollars.
func (v spendView) MullUSD() float64  { return budget.USD(v.Total.Mull.CostNanoUSD) }
func (v spendView) AgentUSD() float64 { return budget.USD(v.Total.Agent.CostNanoUSD) }

// AgentDayUSD is a day's agent cost in dollars.
func (spendView) AgentDayUSD(d spendDay) float64 { return budget.USD(d.Agent.CostNanoUSD) }

// agentDays keeps the agent's priced usage of the overview's days before
// today (UTC), by workspace and day. Reading and pricing 30 days of usage
// events one by one (each at its own time's price) was most of the
// overview's time: 45,000 events took seconds on a busy machine. Events
// are only ever added, so the count of the past days' usage events says
// whether the kept rows still hold: a late import into a past day changes
// it, and the days are read again. Today is always read afresh.
type agentDays struct {
	mu           sync.Mutex
	since, until time.Time
	// n is the window's usage events counted before they were read: one
	// that lands while they are read makes the next count differ.
	n    int64
	rows []overhead.Row
	ok   bool
	// off reads the days every time (benchmarks compare).
	off bool
}

// get returns the priced usage rows of [since, until), kept or read anew.
func (c *agentDays) get(ctx context.Context, s *store.Store, pricing llm.Pricing, since, until time.Time) ([]overhead.Row, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := store.OverheadFilter{Since: since, Until: until}
	n, err := s.CountAgentUsages(ctx, f)
	if err != nil {
		return nil, err
	}
	if c.ok && !c.off && n == c.n && c.since.Equal(since) && c.until.Equal(until) {
		return c.rows, nil
	}
	usages, err := s.AgentUsages(ctx, f)
	if err != nil {
		return nil, err
	}
	c.rows = overhead.Assemble(pricing, usages, nil).Days
	c.since, c.until, c.n, c.ok = since, until, n, true
	return c.rows, nil
}
