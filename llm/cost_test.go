package llm

import (
	"testing"
	"time"

	"github.com/mullhq/mull/config"
)

func TestPeakWindows(t *testing.T) {
	p := NewPricing(config.Default().LLM)
	tests := []struct {
		at   string
		peak bool
	}{
		{"2026-11-30T00:59:00Z", false}, // Monday, before the first window
		{"2026-11-30T01:00:00Z", true},
		{"2026-11-30T03:59:00Z", true},
		{"2026-11-30T04:00:00Z", false},
		{"2026-11-30T06:30:00Z", true},
		{"2026-11-30T10:00:00Z", false},
		{"2026-11-29T02:00:00Z", false}, // Sunday: off-peak all day
		{"2026-11-28T07:00:00Z", false}, // Saturday
	}
	for _, tt := range tests {
		at, _ := time.Parse(time.RFC3339, tt.at)
		if got := p.Peak(at); got != tt.peak {
			t.Errorf("Peak(%s) = %t, want %t", tt.at, got, tt.peak)
		}
	}
}

func TestCostUsesHitMissAndOutputPrices(t *testing.T) {
	p := NewPricing(config.Default().LLM)
	peak, _ := time.Parse(time.RFC3339, "2026-11-30T02:00:00Z")
	offPeak, _ := time.Parse(time.RFC3339, "2026-11-30T12:00:00Z")
	u := Usage{PromptTokens: 1_000_000, CacheHitTokens: 600_000, CacheMissTokens: 400_000, CompletionTokens: 100_000}
	// flash at peak, USD per 1M: hit 0.006, miss 0.30, output 1.20.
	want := int64(600_000*6 + 400_000*300 + 100_000*1200)
	if got := p.Cost("deepseek-v4-flash", peak, u); got != want {
		t.Errorf("peak cost = %d nano-USD, want %d", got, want)
	}
	if got := p.Cost("deepseek-v4-flash", offPeak, u); got != want/2 {
		t.Errorf("off-peak cost = %d nano-USD, want half of peak (%d)", got, want/2)
	}
	allMiss := Usage{PromptTokens: 1_000_000, CacheMissTokens: 1_000_000}
	if hit, miss := p.Cost("deepseek-v4-flash", peak, Usage{PromptTokens: 1_000_000, CacheHitTokens: 1_000_000}), p.Cost("deepseek-v4-flash", peak, allMiss); hit*50 != miss {
		t.Errorf("a cache hit should cost 1/50 of a miss: hit %d, miss %d", hit, miss)
	}
	if got := p.Cost("no-such-model", peak, u); got != 0 {
		t.Errorf("unknown model cost %d, want 0", got)
	}
	if max := p.MaxCost("deepseek-v4-flash", peak, 1000, 500); max < p.Cost("deepseek-v4-flash", peak, Usage{PromptTokens: 1000, CacheMissTokens: 1000, CompletionTokens: 500}) {
		t.Errorf("MaxCost %d below a real cost", max)
	}
}

func TestEstimateIsAnUpperBound(t *testing.T) {
	msgs := []Message{System("abc"), User("你好")} // 3 + 6 bytes
	if got := EstimatePromptTokens(msgs); got != 16+(3+6+8)+(6+4+8) {
		t.Errorf("estimate = %d", got)
	}
}

func TestUsageFrom(t *testing.T) {
	u, ok := usageFrom([]byte("\n\n  {\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":7,\"prompt_cache_hit_tokens\":64,\"prompt_cache_miss_tokens\":36}}"))
	if !ok || u != (Usage{PromptTokens: 100, CompletionTokens: 7, CacheHitTokens: 64, CacheMissTokens: 36}) {
		t.Errorf("usage = %+v, %t", u, ok)
	}
	u, ok = usageFrom([]byte(`{"usage":{"prompt_tokens":100,"completion_tokens":7}}`))
	if !ok || u.CacheMissTokens != 100 || u.CacheHitTokens != 0 {
		t.Errorf("without the split every prompt token is a miss: %+v", u)
	}
	if _, ok := usageFrom([]byte(`{"error":{}}`)); ok {
		t.Error("usage read from an error body")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		"soon":                          0,
		"Mon, 30 Nov 2026 12:00:30 GMT": 30 * time.Second,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", in, got, want)
		}
	}
}
