package llm

import (
	"math"
	"time"

	"github.com/mullhq/mull/config"
)

// Usage is what one call consumed, as DeepSeek reports it.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// CacheHitTokens + CacheMissTokens = PromptTokens (DeepSeek's
	// prompt_cache_hit_tokens / prompt_cache_miss_tokens).
	CacheHitTokens  int64 `json:"prompt_cache_hit_tokens"`
	CacheMissTokens int64 `json:"prompt_cache_miss_tokens"`
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int64 { return u.PromptTokens + u.CompletionTokens }

// Pricing computes costs from the config's price table and peak windows.
type Pricing struct {
	prices   map[string]config.Price
	windows  [][2]int
	zone     *time.Location
	weekdays bool
}

// NewPricing reads the validated LLM config.
func NewPricing(c config.LLM) Pricing {
	p := Pricing{prices: c.Prices, weekdays: c.PeakWeekdaysOnly == nil || *c.PeakWeekdaysOnly}
	p.zone, _ = time.LoadLocation(c.PeakZone)
	if p.zone == nil {
		p.zone = time.UTC
	}
	for _, w := range c.Peak {
		if from, to, err := config.ParseWindow(w); err == nil {
			p.windows = append(p.windows, [2]int{from, to})
		}
	}
	return p
}

// Peak reports whether t falls in a peak-price window.
func (p Pricing) Peak(t time.Time) bool {
	t = t.In(p.zone)
	if p.weekdays && (t.Weekday() == time.Saturday || t.Weekday() == time.Sunday) {
		return false
	}
	m := t.Hour()*60 + t.Minute()
	for _, w := range p.windows {
		if m >= w[0] && m < w[1] {
			return true
		}
	}
	return false
}

// rates returns nano-USD per token for cache hit, miss and output.
func (p Pricing) rates(model string, at time.Time) (hit, miss, out float64) {
	pr, ok := p.prices[model]
	if !ok {
		return 0, 0, 0
	}
	f := 1.0
	if !p.Peak(at) {
		f = pr.OffPeakFactor
	}
	// USD per million tokens = nano-USD per thousandth… = 1000 nano-USD per token per USD/M.
	return pr.CacheHit * f * 1000, pr.CacheMiss * f * 1000, pr.Output * f * 1000
}

// Cost is a call's cost in nano-USD (1e-9 USD), priced at the time it started.
func (p Pricing) Cost(model string, at time.Time, u Usage) int64 {
	hit, miss, out := p.rates(model, at)
	return int64(math.Round(float64(u.CacheHitTokens)*hit + float64(u.CacheMissTokens)*miss + float64(u.CompletionTokens)*out))
}

// MaxCost is an upper bound of a call's cost: every prompt token a cache
// miss, every allowed completion token produced.
func (p Pricing) MaxCost(model string, at time.Time, promptTokens, maxTokens int64) int64 {
	_, miss, out := p.rates(model, at)
	return int64(math.Ceil(float64(promptTokens)*miss + float64(maxTokens)*out))
}

// Known reports whether the price table has the model.
func (p Pricing) Known(model string) bool { _, ok := p.prices[model]; return ok }

// EstimatePromptTokens is an upper bound of a prompt's tokens: DeepSeek's
// tokenizer is byte-level BPE, so no token covers less than one byte; each
// message adds a few special tokens. Reserving this much means a settled
// call never spends more than it reserved.
func EstimatePromptTokens(msgs []Message) int64 {
	n := int64(16)
	for _, m := range msgs {
		n += int64(len(m.Content)) + int64(len(m.Role)) + 8
	}
	return n
}
