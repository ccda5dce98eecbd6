package budget

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/mullhq/mull/store"
)

// Units of an ExhaustedError.
const (
	UnitTokens = "tokens"
	// UnitUSD amounts are in nano-USD.
	UnitUSD = "usd"
)

// Request is one LLM call's worst case, reserved before the call.
type Request struct {
	// JobID is the River job making the call, kept with the reservation for
	// operators; zero when there is none.
	JobID int64
	// Kind is the job kind, counted under "kind:<Kind>". Empty: no kind key.
	Kind string
	// Workspace is the DSH workspace path, counted under
	// "workspace:<Workspace>". Empty: no workspace key.
	Workspace string
	// Tokens is the prompt estimate plus max_tokens.
	Tokens int64
	// NanoUSD is the worst-case cost in 1e-9 USD. Reserve it whenever a key
	// has a money limit: a zero estimate is refused only once the key is
	// already over, so one call may overshoot.
	NanoUSD int64
	// Expires is when ReleaseExpired may give the reservation back if it is
	// still unsettled (its process died); set it past the call's deadline.
	// Zero: DefaultHold from now.
	Expires time.Time
}

// Reservation is what Reserve holds for a call; pass it to Settle or Release.
// Day is the budget day it counts on, even when settled after midnight.
type Reservation struct {
	ID      string   `json:"id"`
	Day     string   `json:"day"`
	Keys    []string `json:"keys"`
	Tokens  int64    `json:"tokens"`
	NanoUSD int64    `json:"nano_usd"`
}

// ExhaustedError is a reservation that did not fit under a key's limit.
// Nothing was reserved on any key. A worker snoozes the job for Wait.
type ExhaustedError struct {
	// Key is a key the request did not fit: the first found, in
	// store.BudgetLockOrder (global last).
	Key string
	// Day is the budget day that is exhausted.
	Day string
	// Limit, Used (reserved + spent) and Need are in Unit: tokens, or
	// nano-USD when Unit is "usd".
	Limit, Used, Need int64
	Unit              string
	// ResetAt is when Day ends and the key starts again from zero.
	ResetAt time.Time
	// Wait is ResetAt minus the ledger's clock at the refusal.
	Wait time.Duration
}

func (e *ExhaustedError) Error() string {
	amount := func(n int64) string {
		if e.Unit == UnitUSD {
			return fmt.Sprintf("$%.4f", USD(n))
		}
		return fmt.Sprintf("%d tokens", n)
	}
	return fmt.Sprintf("budget %q exhausted for %s: %s of %s used, %s more needed; resets at %s",
		e.Key, e.Day, amount(e.Used), amount(e.Limit), amount(e.Need), e.ResetAt.Format(time.RFC3339))
}

// Impossible reports a request larger than the limit itself: waiting for
// the reset will not make it fit, so a worker should fail the job instead of
// snoozing it every day.
func (e *ExhaustedError) Impossible() bool { return e.Need > e.Limit }

// Reserve holds req's tokens and money on every key that applies (see Keys)
// for today, all or nothing. A key without a limit is tracked but never
// refuses. When a key's reserved + spent + need would pass its limit,
// nothing is reserved, the refusal is counted on that key, and the error is
// an *ExhaustedError.
func (l *Ledger) Reserve(ctx context.Context, req Request) (Reservation, error) {
	if req.Tokens < 0 || req.NanoUSD < 0 {
		return Reservation{}, fmt.Errorf("budget: reserve: negative amount (%d tokens, %d nano-USD)", req.Tokens, req.NanoUSD)
	}
	now := l.s.Now()
	day, resetAt := l.Day(now)
	r := Reservation{ID: newID(), Day: day, Keys: Keys(req.Workspace, req.Kind), Tokens: req.Tokens, NanoUSD: req.NanoUSD}
	expires := req.Expires
	if expires.IsZero() {
		expires = now.Add(DefaultHold)
	}
	var refused *ExhaustedError
	err := l.s.InTx(ctx, func(tx *sql.Tx) error {
		limits, err := l.s.BudgetLimits(ctx, tx, append(slices.Clone(r.Keys), KeyDefaultWorkspace)...)
		if err != nil {
			return err
		}
		limits = l.withWorkspaceBudget(limits, req.Workspace)
		// Written before the rows are locked, to hold the locks for less.
		if err := l.s.InsertBudgetReservation(ctx, tx, store.BudgetReservation{
			ID: r.ID, Day: day, Keys: r.Keys, Tokens: r.Tokens, NanoUSD: r.NanoUSD, JobID: req.JobID,
			Kind: req.Kind, Workspace: req.Workspace, CreatedAt: now, ExpiresAt: expires,
		}); err != nil {
			return err
		}
		usage, err := l.s.LockBudgetUsage(ctx, tx, day, r.Keys, now)
		if err != nil {
			return err
		}
		if refused = fit(usage, byKey(limits), r.Tokens, r.NanoUSD); refused != nil {
			if err := l.s.DeleteBudgetReservation(ctx, tx, r.ID); err != nil {
				return err
			}
			return l.s.AddBudgetUsage(ctx, tx, day, []string{refused.Key}, store.BudgetCounters{Refused: 1}, now)
		}
		hold := store.BudgetCounters{ReservedTokens: r.Tokens, ReservedNanoUSD: r.NanoUSD}
		return l.s.AddBudgetUsage(ctx, tx, day, r.Keys, hold, now) // rows held: one statement
	})
	if err != nil {
		return Reservation{}, fmt.Errorf("budget: reserve: %w", err)
	}
	if refused != nil {
		refused.Day, refused.ResetAt, refused.Wait = day, resetAt, resetAt.Sub(now)
		return Reservation{}, refused
	}
	return r, nil
}

// fit returns the first key, in usage order, whose limit a request of
// tokens and nano-USD does not fit under, or nil when it fits under all.
func fit(usage []store.BudgetUsage, limits map[string]store.BudgetLimit, tokens, nano int64) *ExhaustedError {
	for _, u := range usage {
		lim, ok := limitFor(u.Key, limits)
		if !ok {
			continue
		}
		if used := u.ReservedTokens + u.SpentTokens; lim.Tokens > 0 && used+tokens > lim.Tokens {
			return &ExhaustedError{Key: u.Key, Limit: lim.Tokens, Used: used, Need: tokens, Unit: UnitTokens}
		}
		if used := u.ReservedNanoUSD + u.SpentNanoUSD; lim.NanoUSD > 0 && used+nano > lim.NanoUSD {
			return &ExhaustedError{Key: u.Key, Limit: lim.NanoUSD, Used: used, Need: nano, Unit: UnitUSD}
		}
	}
	return nil
}

// add applies one delta to several keys' rows of a day that tx does not
// hold yet: one key at a time in the lock order, each update locking its row.
func (l *Ledger) add(ctx context.Context, tx *sql.Tx, day string, keys []string, d store.BudgetCounters, now time.Time) error {
	for _, k := range store.BudgetLockOrder(keys) {
		if err := l.s.AddBudgetUsage(ctx, tx, day, []string{k}, d, now); err != nil {
			return err
		}
	}
	return nil
}

func byKey(limits []store.BudgetLimit) map[string]store.BudgetLimit {
	m := make(map[string]store.BudgetLimit, len(limits))
	for _, l := range limits {
		m[l.Key] = l
	}
	return m
}

// withWorkspaceBudget puts workspace's own token budget, when it has one,
// in place of its key's token limit (keeping the key's money limit).
func (l *Ledger) withWorkspaceBudget(limits []store.BudgetLimit, workspace string) []store.BudgetLimit {
	if l.workspace == nil || workspace == "" {
		return limits
	}
	tokens, ok := l.workspace(workspace)
	if !ok {
		return limits
	}
	key := workspacePrefix + workspace
	own := store.BudgetLimit{Key: key, Tokens: tokens}
	if i := slices.IndexFunc(limits, func(b store.BudgetLimit) bool { return b.Key == key }); i >= 0 {
		own.NanoUSD = limits[i].NanoUSD
		limits = slices.Delete(slices.Clone(limits), i, i+1)
	} else if i := slices.IndexFunc(limits, func(b store.BudgetLimit) bool { return b.Key == KeyDefaultWorkspace }); i >= 0 {
		own.NanoUSD = limits[i].NanoUSD
	}
	return append(limits, own)
}
