package config

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
)

// LLM configures the DeepSeek client.
type LLM struct {
	// BaseURL of the OpenAI-format API. Defaults to "https://api.deepseek.com".
	// Env: MULL_LLM_BASE_URL.
	BaseURL string `toml:"base_url"`
	// APIKey authenticates to DeepSeek. Env: DEEPSEEK_API_KEY or MULL_LLM_API_KEY.
	APIKey string `toml:"api_key" secret:"true"`
	// CallTimeout is the absolute deadline of one call, keep-alive lines
	// included. Defaults to 5m. Env: MULL_LLM_CALL_TIMEOUT.
	CallTimeout Duration `toml:"call_timeout"`
	// Default is what every job kind uses unless Kinds says otherwise.
	// Defaults: model deepseek-v4-flash, temperature 0.2, max_tokens 4000,
	// thinking off.
	Default Model `toml:"default"`
	// Kinds overrides Default per job kind, field by field ([llm.kinds.retro_session]).
	Kinds map[string]Model `toml:"kinds"`
	// Prices per model, in USD per million tokens. Defaults to DeepSeek's
	// last-seen prices for deepseek-v4-flash and deepseek-v4-pro.
	Prices map[string]Price `toml:"prices"`
	// Peak lists the peak-price windows as "HH:MM-HH:MM" in PeakZone on
	// weekdays; everything else is off-peak. Defaults to
	// ["01:00-04:00", "06:00-10:00"].
	Peak []string `toml:"peak"`
	// PeakZone is the time zone of Peak. Defaults to "UTC".
	PeakZone string `toml:"peak_zone"`
	// PeakWeekdaysOnly: weekends are off-peak all day. Defaults to true.
	PeakWeekdaysOnly *bool `toml:"peak_weekdays_only"`
	// MaxRetryAfter caps how long a job waits for a 429's Retry-After.
	// Defaults to 1h; at most 24h. Env: MULL_LLM_MAX_RETRY_AFTER.
	MaxRetryAfter Duration `toml:"max_retry_after"`
	// MaxSnoozes: a job rate-limited (429) this many times goes to the dead
	// letters with the reason "rate-limited N times". Defaults to 12.
	// Env: MULL_LLM_MAX_SNOOZES.
	MaxSnoozes int `toml:"max_snoozes"`
	// KeepPrompts is how long a call's record keeps the request's messages
	// and the model's answer (credentials redacted by the trust gate) for
	// `mull llm calls show`, so an operator can see what a retro read and
	// wrote: a duration such as "7d" or
	// "36h"; "0" keeps none. The budget sweep prunes older ones. Defaults
	// to "7d". Env: MULL_LLM_KEEP_PROMPTS.
	KeepPrompts string `toml:"keep_prompts"`
}

// KeepPromptsFor is KeepPrompts as a duration; 0 keeps no prompts.
func (l LLM) KeepPromptsFor() time.Duration {
	d, _ := ParseDuration(l.KeepPrompts)
	return max(d, 0)
}

// Model is how one job kind calls the model. Zero fields inherit.
type Model struct {
	// Model name, for example "deepseek-v4-flash" or "deepseek-v4-pro".
	Model string `toml:"model"`
	// Temperature, ignored by DeepSeek when thinking is on.
	Temperature *float32 `toml:"temperature"`
	// MaxTokens caps the completion (reasoning included).
	MaxTokens int `toml:"max_tokens"`
	// Thinking turns DeepSeek's thinking mode on.
	Thinking *bool `toml:"thinking"`
	// ReasoningEffort is low, high or max (thinking only).
	ReasoningEffort string `toml:"reasoning_effort"`
}

// Price is one model's price in USD per million tokens, at peak; off-peak
// is OffPeakFactor of it.
type Price struct {
	CacheHit  float64 `toml:"cache_hit"`
	CacheMiss float64 `toml:"cache_miss"`
	Output    float64 `toml:"output"`
	// OffPeakFactor multiplies every price off-peak. Defaults to 0.5.
	OffPeakFactor float64 `toml:"off_peak_factor"`
}

// Budget configures the daily token budgets.
type Budget struct {
	// Zone is where a budget day starts and ends. Defaults to "UTC".
	// Env: MULL_BUDGET_ZONE.
	Zone string `toml:"zone"`
	// Limits are the daily limits by key: "global", "workspace:<path>",
	// "kind:<job kind>", or "workspace:*" for every workspace that has no
	// limit of its own. `mull budget set` overrides them at runtime.
	// Defaults to {"workspace:*" = 400000 tokens}, the seed's per-workspace
	// daily budget, and "global" = Global.
	Limits map[string]Limit `toml:"limits"`
	// Global is the default daily token cap of all calls together, the
	// "global" key's limit unless [budget.limits] sets that key. Defaults
	// to 2000000. Env: MULL_BUDGET_GLOBAL.
	Global int64 `toml:"global"`
}

// Limit is one key's daily limit.
type Limit struct {
	// Tokens per day, input and output together. Zero: no token limit.
	Tokens int64 `toml:"tokens"`
	// USD per day. Zero: no money limit.
	USD float64 `toml:"usd"`
}

func boolPtr(b bool) *bool          { return &b }
func float32Ptr(f float32) *float32 { return &f }

func (l LLM) withDefaults() LLM {
	l.BaseURL = cmp.Or(l.BaseURL, "https://api.deepseek.com")
	l.CallTimeout = cmp.Or(l.CallTimeout, Duration(5*time.Minute))
	l.Default.Model = cmp.Or(l.Default.Model, "deepseek-v4-flash")
	if l.Default.Temperature == nil {
		l.Default.Temperature = float32Ptr(0.2)
	}
	// The seed's retros answer in at most 3000 tokens (its sleep-time
	// consolidation in 4000, the default). A [llm.kinds.*] max_tokens wins,
	// and so does a [llm.default] max_tokens someone set (to cap spending).
	if l.Default.MaxTokens == 0 {
		for _, kind := range []string{"retro_session", "retro_error"} {
			if l.Kinds == nil {
				l.Kinds = map[string]Model{}
			}
			k := l.Kinds[kind]
			k.MaxTokens = cmp.Or(k.MaxTokens, 3000)
			l.Kinds[kind] = k
		}
	}
	l.Default.MaxTokens = cmp.Or(l.Default.MaxTokens, 4000)
	if l.Default.Thinking == nil {
		l.Default.Thinking = boolPtr(false)
	}
	if l.Prices == nil {
		l.Prices = map[string]Price{
			"deepseek-v4-flash": {CacheHit: 0.006, CacheMiss: 0.30, Output: 1.20},
			"deepseek-v4-pro":   {CacheHit: 0.044, CacheMiss: 1.32, Output: 3.96},
		}
	}
	for name, p := range l.Prices {
		p.OffPeakFactor = cmp.Or(p.OffPeakFactor, 0.5)
		l.Prices[name] = p
	}
	if l.Peak == nil {
		l.Peak = []string{"01:00-04:00", "06:00-10:00"}
	}
	l.PeakZone = cmp.Or(l.PeakZone, "UTC")
	if l.PeakWeekdaysOnly == nil {
		l.PeakWeekdaysOnly = boolPtr(true)
	}
	l.MaxRetryAfter = cmp.Or(l.MaxRetryAfter, Duration(time.Hour))
	l.MaxSnoozes = cmp.Or(l.MaxSnoozes, 12)
	l.KeepPrompts = cmp.Or(strings.TrimSpace(l.KeepPrompts), "7d")
	return l
}

// ForKind is the effective model settings of a job kind.
func (l LLM) ForKind(kind string) Model {
	m, o := l.Default, l.Kinds[kind]
	m.Model = cmp.Or(o.Model, m.Model)
	if o.Temperature != nil {
		m.Temperature = o.Temperature
	}
	m.MaxTokens = cmp.Or(o.MaxTokens, m.MaxTokens)
	if o.Thinking != nil {
		m.Thinking = o.Thinking
	}
	m.ReasoningEffort = cmp.Or(o.ReasoningEffort, m.ReasoningEffort)
	return m
}

func (l LLM) validate() error {
	u, err := url.Parse(l.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("llm.base_url", "%q is not an http(s) URL", l.BaseURL)
	}
	if l.CallTimeout <= 0 {
		return bad("llm.call_timeout", "must be positive, got %s", l.CallTimeout)
	}
	if l.MaxRetryAfter < Duration(time.Second) || l.MaxRetryAfter > Duration(24*time.Hour) {
		return bad("llm.max_retry_after", "must be between 1s and 24h, got %s", l.MaxRetryAfter)
	}
	if l.MaxSnoozes < 1 || l.MaxSnoozes > 1000 {
		return bad("llm.max_snoozes", "must be between 1 and 1000, got %d", l.MaxSnoozes)
	}
	if d, err := ParseDuration(l.KeepPrompts); err != nil {
		return bad("llm.keep_prompts", "%v", err)
	} else if d < 0 {
		return bad("llm.keep_prompts", "must not be negative (\"0\" keeps no prompts), got %s", l.KeepPrompts)
	}
	if err := l.Default.validate("llm.default"); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(l.Kinds)) {
		if err := l.Kinds[k].validate("llm.kinds." + k); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(l.Prices)) {
		p := l.Prices[name]
		if p.CacheHit < 0 || p.CacheMiss < 0 || p.Output < 0 {
			return bad("llm.prices."+name, "prices must not be negative")
		}
		if p.OffPeakFactor < 0 || p.OffPeakFactor > 1 {
			return bad("llm.prices."+name+".off_peak_factor", "must be between 0 and 1, got %g", p.OffPeakFactor)
		}
	}
	if _, err := time.LoadLocation(l.PeakZone); err != nil {
		return bad("llm.peak_zone", "unknown time zone %q", l.PeakZone)
	}
	for i, w := range l.Peak {
		if _, _, err := ParseWindow(w); err != nil {
			return bad(fmt.Sprintf("llm.peak[%d]", i), "%v", err)
		}
	}
	return nil
}

// retiredModels stopped working at DeepSeek on 2026-07-24.
var retiredModels = map[string]bool{"deepseek-chat": true, "deepseek-reasoner": true}

func (m Model) validate(key string) error {
	if retiredModels[m.Model] {
		return bad(key+".model", "%q was retired by DeepSeek on 2026-07-24; use deepseek-v4-flash or deepseek-v4-pro", m.Model)
	}
	if m.MaxTokens < 0 || m.MaxTokens > 1_000_000 {
		return bad(key+".max_tokens", "must be between 1 and 1000000, got %d", m.MaxTokens)
	}
	if m.Temperature != nil && (*m.Temperature < 0 || *m.Temperature > 2) {
		return bad(key+".temperature", "must be between 0 and 2, got %g", *m.Temperature)
	}
	switch m.ReasoningEffort {
	case "", "low", "high", "max":
	default:
		return bad(key+".reasoning_effort", "%q is not one of low, high, max", m.ReasoningEffort)
	}
	return nil
}

// ParseWindow reads "HH:MM-HH:MM" into minutes after midnight.
func ParseWindow(w string) (from, to int, err error) {
	a, b, ok := strings.Cut(w, "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not HH:MM-HH:MM", w)
	}
	pa, err1 := time.Parse("15:04", strings.TrimSpace(a))
	pb, err2 := time.Parse("15:04", strings.TrimSpace(b))
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%q is not HH:MM-HH:MM", w)
	}
	from, to = pa.Hour()*60+pa.Minute(), pb.Hour()*60+pb.Minute()
	if b := strings.TrimSpace(b); b == "24:00" {
		to = 24 * 60
	}
	if to <= from {
		return 0, 0, fmt.Errorf("%q ends before it starts", w)
	}
	return from, to, nil
}

func (b Budget) withDefaults() Budget {
	b.Zone = cmp.Or(b.Zone, "UTC")
	if b.Limits == nil {
		b.Limits = map[string]Limit{"workspace:*": {Tokens: 400_000}}
	}
	b.Global = cmp.Or(b.Global, 2_000_000)
	if _, ok := b.Limits["global"]; !ok && b.Global > 0 {
		b.Limits = maps.Clone(b.Limits)
		b.Limits["global"] = Limit{Tokens: b.Global}
	}
	return b
}

func (b Budget) validate() error {
	if _, err := time.LoadLocation(b.Zone); err != nil {
		return bad("budget.zone", "unknown time zone %q", b.Zone)
	}
	if b.Global < 0 {
		return bad("budget.global", "must not be negative, got %d", b.Global)
	}
	for _, k := range slices.Sorted(maps.Keys(b.Limits)) {
		if err := ValidateBudgetKey(k); err != nil {
			return bad("budget.limits."+k, "%v", err)
		}
		l := b.Limits[k]
		if l.Tokens < 0 || l.USD < 0 {
			return bad("budget.limits."+k, "limits must not be negative")
		}
	}
	return nil
}

// ValidateBudgetKey checks a budget key: global, workspace:<path>,
// workspace:*, or kind:<job kind>.
func ValidateBudgetKey(k string) error {
	switch {
	case k == "global", k == "workspace:*":
		return nil
	case strings.HasPrefix(k, "workspace:") && len(k) > len("workspace:"):
		return nil
	case strings.HasPrefix(k, "kind:") && len(k) > len("kind:"):
		return nil
	}
	return fmt.Errorf("budget key %q: want global, workspace:<path>, workspace:* or kind:<job kind>", k)
}
