package budget

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mullhq/mull/store"
)

// KeyReport is one key's day: its limit, what is held and spent, and how
// the calls went.
type KeyReport struct {
	Key string `json:"key"`
	Day string `json:"day"`
	// LimitTokens and LimitUSD are the limit that applies; zero: none.
	LimitTokens int64   `json:"limit_tokens"`
	LimitUSD    float64 `json:"limit_usd"`
	// LimitKey names the key whose limit applies when it is not Key itself:
	// "workspace:*" for a workspace without a limit of its own.
	LimitKey       string `json:"limit_key,omitempty"`
	ReservedTokens int64  `json:"reserved_tokens"`
	SpentTokens    int64  `json:"spent_tokens"`
	// RemainingTokens is LimitTokens minus reserved and spent, never below
	// zero; -1 when the key has no token limit.
	RemainingTokens int64 `json:"remaining_tokens"`
	// Calls were settled; FailedCalls were released; Refused reservations
	// did not fit (their jobs were snoozed); Overruns are settled calls that
	// used more than they reserved.
	Calls            int64 `json:"calls"`
	FailedCalls      int64 `json:"failed_calls"`
	Refused          int64 `json:"refused"`
	Overruns         int64 `json:"overruns"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CacheHitTokens   int64 `json:"cache_hit_tokens"`
	// CacheHitShare is CacheHitTokens / PromptTokens, 0 without prompts.
	CacheHitShare float64 `json:"cache_hit_share"`
	// CostUSD is what settled calls cost; ReservedUSD is held for calls in
	// flight.
	CostUSD     float64 `json:"cost_usd"`
	ReservedUSD float64 `json:"reserved_usd"`
	// Source of the limit: "config", "operator", "workspace" (the
	// workspace's own budget setting), or "" when none applies.
	Source string `json:"source"`
}

// DayReport is every key's report for one budget day.
type DayReport struct {
	Day string `json:"day"`
	// Zone is the time zone of Day.
	Zone string `json:"zone"`
	// ResetAt is when Day ends.
	ResetAt time.Time   `json:"reset_at"`
	Keys    []KeyReport `json:"keys"`
}

// Report lists, by key, every key with a limit and every key used on day
// ("" for today in the ledger's zone, else YYYY-MM-DD; a bad one wraps
// ErrBadDay). The workspace:* row shows the default limit itself: usage is
// tracked per workspace.
func (l *Ledger) Report(ctx context.Context, day string) ([]KeyReport, error) {
	r, err := l.ReportDay(ctx, day)
	return r.Keys, err
}

// ReportDay is Report with the day's label, zone and end.
func (l *Ledger) ReportDay(ctx context.Context, day string) (DayReport, error) {
	day, resetAt, err := l.ParseDay(day)
	if err != nil {
		return DayReport{}, fmt.Errorf("budget: report: %w", err)
	}
	limits, usage, err := l.s.BudgetDay(ctx, day)
	if err != nil {
		return DayReport{}, fmt.Errorf("budget: report %s: %w", day, err)
	}
	keys := buildReport(day, limits, usage)
	if today, _, _ := l.ParseDay(""); day == today {
		// Today's limits are what the next reservation is held to,
		// a workspace's own budget setting included.
		for i := range keys {
			keys[i] = l.withOwnBudget(keys[i])
		}
	}
	return DayReport{Day: day, Zone: l.loc.String(), ResetAt: resetAt, Keys: keys}, nil
}

// buildReport joins a day's usage rows with the limits that apply to them,
// adding a zero row for each limit nobody used.
func buildReport(day string, limits []store.BudgetLimit, usage []store.BudgetUsage) []KeyReport {
	lims := byKey(limits)
	out := map[string]KeyReport{}
	for _, lim := range limits {
		out[lim.Key] = keyReport(store.BudgetUsage{Key: lim.Key, Day: day}, lims)
	}
	for _, u := range usage {
		out[u.Key] = keyReport(u, lims)
	}
	return slices.SortedFunc(maps.Values(out), func(a, b KeyReport) int { return cmp.Compare(a.Key, b.Key) })
}

func keyReport(u store.BudgetUsage, limits map[string]store.BudgetLimit) KeyReport {
	r := KeyReport{
		Key: u.Key, Day: u.Day, ReservedTokens: u.ReservedTokens, SpentTokens: u.SpentTokens,
		RemainingTokens: -1, Calls: u.Calls, FailedCalls: u.FailedCalls, Refused: u.Refused, Overruns: u.Overruns,
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CacheHitTokens: u.CacheHitTokens,
		CostUSD: USD(u.SpentNanoUSD), ReservedUSD: USD(u.ReservedNanoUSD),
	}
	if u.PromptTokens > 0 {
		r.CacheHitShare = float64(u.CacheHitTokens) / float64(u.PromptTokens)
	}
	lim, ok := limitFor(u.Key, limits)
	if !ok {
		return r
	}
	r.LimitTokens, r.LimitUSD, r.Source = lim.Tokens, USD(lim.NanoUSD), lim.Source
	if lim.Key != u.Key {
		r.LimitKey = lim.Key
	}
	if lim.Tokens > 0 {
		r.RemainingTokens = max(0, lim.Tokens-u.ReservedTokens-u.SpentTokens)
	}
	return r
}
