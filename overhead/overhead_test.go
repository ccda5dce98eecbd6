package overhead_test

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/overhead"
	"github.com/mullhq/mull/store"
)

func ptr[T any](v T) *T { return &v }

// TestAssemble prices the agent's steps at their own time (cache hits at
// the cache-hit price, off-peak at half), sums mull's spend beside them by
// workspace and UTC day, and derives the ratio and the cache share.
func TestAssemble(t *testing.T) {
	pricing := llm.NewPricing(config.Default().LLM)
	peak := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)     // a Monday, 06:00-10:00
	offPeak := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) // same day, off-peak
	step := func(ws string, at time.Time, model string, miss, hit, out int64) store.AgentUsage {
		return store.AgentUsage{Workspace: ws, Time: at, UsagePayload: events.UsagePayload{
			Model: model, InputTokens: miss, CacheReadTokens: hit, OutputTokens: out, ReasoningTokens: ptr(out / 2)}}
	}
	usages := []store.AgentUsage{
		step("/a", peak, "deepseek-v4-flash", 1_000_000, 0, 0),       // 0.30 USD
		step("/a", offPeak, "deepseek-v4-flash", 0, 1_000_000, 0),    // 0.003 USD: the cache-hit price, halved
		step("/a", offPeak, "deepseek-v4-flash", 0, 0, 1_000_000),    // 0.60 USD
		step("/a", peak.AddDate(0, 0, 1), "mystery-model", 5, 5, 5),  // unpriced
		step("/b", peak, "deepseek-v4-pro", 1_000_000, 1_000_000, 0), // 1.32 + 0.044
	}
	spend := []store.LearningSpend{
		{Workspace: "/a", Day: "2026-11-30", Kind: "retro_session", Calls: 2, PromptTokens: 4000, CacheHitTokens: 3000, CompletionTokens: 500, CostNanoUSD: 9_030_000},
		{Workspace: "/a", Day: "2026-11-30", Kind: "consolidate", Calls: 1, PromptTokens: 1000, CacheHitTokens: 0, CompletionTokens: 100, CostNanoUSD: 6_000_000},
		{Workspace: "/c", Day: "2026-11-29", Kind: "retro_error", Calls: 1, PromptTokens: 10, CostNanoUSD: 1},
	}
	r := overhead.Assemble(pricing, usages, spend)
	if len(r.Days) != 4 || len(r.Workspaces) != 3 {
		t.Fatalf("days %+v\nworkspaces %+v", r.Days, r.Workspaces)
	}
	a := r.Days[0]
	if a.Workspace != "/a" || a.Day != "2026-11-30" || a.Agent.Steps != 3 || a.Agent.PromptTokens != 2_000_000 ||
		a.Agent.CacheHitTokens != 1_000_000 || a.Agent.OutputTokens != 1_000_000 || a.Agent.ReasoningTokens != 500_000 {
		t.Fatalf("/a day: %+v", a)
	}
	if a.Agent.CostNanoUSD != 903_000_000 {
		t.Errorf("agent cost %d nano-USD, want 903000000 (0.30 + 0.003 + 0.60)", a.Agent.CostNanoUSD)
	}
	if a.Mull.CostNanoUSD != 15_030_000 || a.Mull.Calls != 3 || a.Mull.CostByKind["consolidate"] != 6_000_000 {
		t.Errorf("mull %+v", a.Mull)
	}
	if a.Ratio == nil || math.Abs(*a.Ratio-15_030_000.0/903_000_000) > 1e-12 || a.MullCacheHitShare == nil || *a.MullCacheHitShare != 0.6 {
		t.Errorf("ratio %v, cache share %v", a.Ratio, a.MullCacheHitShare)
	}
	if u := r.Days[1]; u.Day != "2026-12-01" || u.Agent.UnpricedSteps != 1 || u.Agent.CostNanoUSD != 0 || u.Ratio != nil {
		t.Errorf("the unpriced day: %+v", u)
	}
	if b := r.Workspaces[1]; b.Workspace != "/b" || b.Agent.CostNanoUSD != 1_364_000_000 || b.Mull.Calls != 0 || *b.Ratio != 0 || b.MullCacheHitShare != nil {
		t.Errorf("/b: %+v", b)
	}
	if c := r.Workspaces[2]; c.Workspace != "/c" || c.Ratio != nil || c.Mull.CostNanoUSD != 1 {
		t.Errorf("/c, mull without the agent: %+v", c)
	}
	if tot := r.Total; tot.Agent.Steps != 5 || tot.Agent.CostNanoUSD != 903_000_000+1_364_000_000 || tot.Mull.CostNanoUSD != 15_030_001 ||
		tot.Mull.CostByKind["retro_error"] != 1 || tot.Agent.UnpricedSteps != 1 {
		t.Errorf("total %+v", tot)
	}
}

// AssemblePriced with some days' usage priced ahead (an earlier Assemble's
// Days) gives what Assemble gives for all the usage at once, whichever
// way the usage is split.
func TestAssemblePriced(t *testing.T) {
	pricing := llm.NewPricing(config.Default().LLM)
	day := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	var usages []store.AgentUsage
	for i := range 12 {
		usages = append(usages, store.AgentUsage{Workspace: []string{"/a", "/b"}[i%2], Time: day.Add(time.Duration(i) * 7 * time.Hour),
			UsagePayload: events.UsagePayload{Model: []string{"deepseek-v4-flash", "deepseek-v4-pro", "mystery"}[i%3],
				InputTokens: int64(1000 * i), CacheReadTokens: int64(333 * i), OutputTokens: int64(77 * i), ReasoningTokens: ptr(int64(i))}})
	}
	spend := []store.LearningSpend{{Workspace: "/a", Day: "2026-11-29", Kind: "retro_session", Calls: 2, PromptTokens: 40, CostNanoUSD: 9_000}}
	want := overhead.Assemble(pricing, usages, spend)
	for split := range len(usages) + 1 {
		past := overhead.Assemble(pricing, usages[:split], nil).Days
		got := overhead.AssemblePriced(pricing, past, usages[split:], spend)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("split at %d:\n got %+v\nwant %+v", split, got, want)
		}
	}
}

func TestAssembleEmpty(t *testing.T) {
	r := overhead.Assemble(llm.NewPricing(config.Default().LLM), nil, nil)
	if r.Days == nil || r.Workspaces == nil || r.Total.Ratio != nil || r.Total.Mull.CostByKind == nil {
		t.Fatalf("%+v", r)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-11-29":           time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
		"2026-11-29T08:00:00Z": time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC),
		"7d":                   now.AddDate(0, 0, -7),
	} {
		if got, err := overhead.ParseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := overhead.ParseSince("last week", now); err == nil || !strings.Contains(err.Error(), "want a day (2026-11-29)") {
		t.Errorf("a bad since: %v", err)
	}
}
