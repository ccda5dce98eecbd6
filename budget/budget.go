// Package budget is mull's daily token ledger. Before each LLM call a caller
// reserves its worst case (prompt estimate + max_tokens) against every key
// that applies to it — "global", "workspace:<path>" and "kind:<job kind>" —
// and after the call settles to what the call really used, or releases the
// reservation when the call failed before using anything.
//
// A reservation either fits under every key's limit or is refused as a
// whole with an *ExhaustedError that says when the key resets; the worker
// snoozes the job until then (a snooze burns no attempt). Reserve and settle
// hold each key's usage row while they change it (a row lock on Postgres,
// the single write transaction on SQLite), so concurrent jobs can never push
// a key's settled total over its limit as long as no call uses more than it
// reserved.
//
// A budget day runs from midnight to midnight in the configured zone.
// Limits come from the config file (SyncConfig at startup) and can be
// overridden at runtime by an operator (SetLimit), without a restart: every
// Reserve reads the limits afresh.
package budget

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
)

// Key names and prefixes.
const (
	KeyGlobal           = "global"
	KeyDefaultWorkspace = "workspace:*"
	workspacePrefix     = "workspace:"
	kindPrefix          = "kind:"
)

// DefaultHold is how long a reservation without an Expires is held before
// ReleaseExpired gives it back.
const DefaultHold = time.Hour

// expiredBatch bounds the reservations one ReleaseExpired call releases.
const expiredBatch = 1000

// Ledger reserves, settles and reports daily budgets in the store. It is
// safe for concurrent use; all its state is in the database.
type Ledger struct {
	s   *store.Store
	loc *time.Location
	cfg config.Budget
	log *slog.Logger
	// workspace is a workspace's own daily token budget (WithWorkspaceBudget).
	workspace func(workspace string) (tokens int64, ok bool)
}

// Option changes how New builds a Ledger.
type Option func(*Ledger)

// WithLogger makes the ledger log overruns (a call that used more than it
// reserved) to l. Without it they are only counted.
func WithLogger(l *slog.Logger) Option {
	return func(led *Ledger) { led.log = l.With("component", "budget") }
}

// WithWorkspaceBudget makes each Reserve ask f for the workspace's own
// daily token budget (its per-workspace budget setting, wsconfig): when ok,
// it is the "workspace:<path>" key's token limit for that reservation,
// whatever budget.limits or `mull budget set` say (0: no token limit);
// the key's money limit stays. Asked at every Reserve, so a change holds
// from the workspace's next LLM call.
func WithWorkspaceBudget(f func(workspace string) (tokens int64, ok bool)) Option {
	return func(led *Ledger) { led.workspace = f }
}

// New builds a ledger on s. Its clock is the store's (store.SetClock in
// tests). It validates cfg's zone and keys but writes nothing: call
// SyncConfig once at startup to bring the database's limits in line.
func New(s *store.Store, cfg config.Budget, opts ...Option) (*Ledger, error) {
	zone := cfg.Zone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("budget: unknown time zone %q", zone)
	}
	for k, lim := range cfg.Limits {
		if err := config.ValidateBudgetKey(k); err != nil {
			return nil, fmt.Errorf("budget: %w", err)
		}
		if lim.Tokens < 0 || lim.USD < 0 {
			return nil, fmt.Errorf("budget: %s: limits must not be negative", k)
		}
	}
	l := &Ledger{s: s, loc: loc, cfg: cfg, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(l)
	}
	return l, nil
}

// Zone is the time zone budget days are counted in.
func (l *Ledger) Zone() *time.Location { return l.loc }

// Day is the budget day t falls in, as YYYY-MM-DD, and when that day ends:
// the next midnight in the ledger's zone.
func (l *Ledger) Day(t time.Time) (day string, resetAt time.Time) {
	t = t.In(l.loc)
	y, m, d := t.Date()
	return t.Format(time.DateOnly), time.Date(y, m, d+1, 0, 0, 0, 0, l.loc)
}

// ParseDay checks a YYYY-MM-DD day label and returns it with the moment
// that day ends in the ledger's zone; "" means today. A bad label's error
// wraps ErrBadDay.
func (l *Ledger) ParseDay(s string) (day string, resetAt time.Time, err error) {
	if s == "" {
		day, resetAt = l.Day(l.s.Now())
		return day, resetAt, nil
	}
	t, err := time.ParseInLocation(time.DateOnly, s, l.loc)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: want YYYY-MM-DD, got %q", ErrBadDay, s)
	}
	day, resetAt = l.Day(t)
	return day, resetAt, nil
}

// ErrBadDay is wrapped by errors about a day label that is not YYYY-MM-DD.
var ErrBadDay = fmt.Errorf("bad budget day")

// Keys are the usage keys a call is counted under, sorted: "global" always,
// "kind:<kind>" when kind is set, "workspace:<workspace>" when workspace is
// set. Sorted order is the order rows are locked in.
func Keys(workspace, kind string) []string {
	keys := []string{KeyGlobal}
	if kind != "" {
		keys = append(keys, kindPrefix+kind)
	}
	if workspace != "" {
		keys = append(keys, workspacePrefix+workspace)
	}
	slices.Sort(keys)
	return keys
}

// limitFor is the limit that applies to a usage key: its own row, or for a
// workspace without one the workspace:* default. ok is false when no limit
// applies (the key is tracked but never refuses). A workspace with its own
// row of zero is deliberately unlimited, whatever the default says.
func limitFor(key string, limits map[string]store.BudgetLimit) (store.BudgetLimit, bool) {
	if lim, ok := limits[key]; ok {
		return lim, true
	}
	if strings.HasPrefix(key, workspacePrefix) {
		lim, ok := limits[KeyDefaultWorkspace]
		return lim, ok
	}
	return store.BudgetLimit{}, false
}

// NanoUSD converts dollars to nano-dollars, the ledger's unit of money.
func NanoUSD(usd float64) int64 { return int64(math.Round(usd * 1e9)) }

// USD converts nano-dollars to dollars.
func USD(nano int64) float64 { return float64(nano) / 1e9 }

func newID() string { return "rsv_" + strings.ToLower(rand.Text()) }
