package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mullhq/mull/store"
)

// Usage is what one call really used, from the API's usage block.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	// CacheHitTokens and CacheMissTokens split PromptTokens (DeepSeek's
	// prompt_cache_hit_tokens and prompt_cache_miss_tokens).
	CacheHitTokens  int64
	CacheMissTokens int64
	// NanoUSD is the call's cost in 1e-9 USD.
	NanoUSD int64
}

// Tokens is what a call counts against token limits: prompt and completion.
func (u Usage) Tokens() int64 { return u.PromptTokens + u.CompletionTokens }

// Settle turns a reservation into what the call used: on every key of the
// reservation's day, reserved drops by the reservation, spent grows by the
// usage, and the call is counted. Settling twice, or after Release, does
// nothing. A reservation that already expired (ReleaseExpired gave its hold
// back) still records its usage: the call happened.
//
// A call should never use more than it reserved; if it does, the truth is
// recorded anyway, counted as an overrun on every key, and logged, because
// the key may now be over its limit.
func (l *Ledger) Settle(ctx context.Context, r Reservation, u Usage) error {
	if r.ID == "" {
		return errors.New("budget: settle: empty reservation")
	}
	if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.CacheHitTokens < 0 || u.CacheMissTokens < 0 || u.NanoUSD < 0 {
		return fmt.Errorf("budget: settle %s: negative usage %+v", r.ID, u)
	}
	now := l.s.Now()
	var held store.BudgetReservation
	var overrun, late bool
	err := l.s.InTx(ctx, func(tx *sql.Tx) error {
		row, err := l.s.LockBudgetReservation(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		d := store.BudgetCounters{
			SpentTokens: u.Tokens(), SpentNanoUSD: u.NanoUSD, Calls: 1,
			PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
			CacheHitTokens: u.CacheHitTokens, CacheMissTokens: u.CacheMissTokens,
		}
		switch row.Outcome {
		case store.ReservationReserved:
			d.ReservedTokens, d.ReservedNanoUSD = -row.Tokens, -row.NanoUSD
		case store.ReservationExpired:
			late = true // its hold is already gone: only record the usage
		default:
			return nil // settled or released already
		}
		held, overrun = row, overran(row, u)
		if overrun {
			d.Overruns = 1
		}
		if err := l.s.FinishBudgetReservation(ctx, tx, row.ID, store.ReservationSettled, now, u.Tokens(), u.NanoUSD); err != nil {
			return err
		}
		return l.add(ctx, tx, row.Day, row.Keys, d, now)
	})
	if err != nil {
		return fmt.Errorf("budget: settle %s: %w", r.ID, err)
	}
	if overrun || late {
		l.log.Warn("budget settled beyond its reservation", "reservation", held.ID, "job_id", held.JobID,
			"keys", held.Keys, "day", held.Day, "reserved_tokens", held.Tokens, "used_tokens", u.Tokens(),
			"reserved_nano_usd", held.NanoUSD, "used_nano_usd", u.NanoUSD, "overrun", overrun, "after_expiry", late)
	}
	return nil
}

// overran reports a call that used more than its reservation held. Money is
// checked only when some was reserved: a caller that reserves no money has
// no estimate to beat.
func overran(r store.BudgetReservation, u Usage) bool {
	return u.Tokens() > r.Tokens || (r.NanoUSD > 0 && u.NanoUSD > r.NanoUSD)
}

// Release gives a reservation back when its call failed before using
// anything: reserved drops by the reservation on every key, and the call is
// counted in FailedCalls (not in Calls, which are settled calls). Releasing
// twice, or after Settle, does nothing.
func (l *Ledger) Release(ctx context.Context, r Reservation) error {
	if r.ID == "" {
		return errors.New("budget: release: empty reservation")
	}
	if _, err := l.release(ctx, r.ID, store.ReservationReleased); err != nil {
		return fmt.Errorf("budget: release %s: %w", r.ID, err)
	}
	return nil
}

// ReleaseExpired releases every reservation still held past its Expires
// (its process died before settling) and returns how many it released. They
// are not counted as failed calls: nobody knows how they ended. Run it
// periodically; it is safe on several processes at once.
func (l *Ledger) ReleaseExpired(ctx context.Context) (int, error) {
	released := 0
	for {
		ids, err := l.s.ExpiredBudgetReservations(ctx, l.s.Now(), expiredBatch)
		if err != nil {
			return released, fmt.Errorf("budget: release expired: %w", err)
		}
		n := 0
		for _, id := range ids {
			ok, err := l.release(ctx, id, store.ReservationExpired)
			if err != nil {
				return released, fmt.Errorf("budget: release expired %s: %w", id, err)
			}
			if ok {
				n++
			}
		}
		released += n
		if len(ids) < expiredBatch || n == 0 {
			return released, nil
		}
	}
}

// release moves a held reservation to outcome (released or expired) and
// gives its hold back, reporting whether it did. An expiry is checked again
// under the lock: the reservation may have been settled meanwhile.
func (l *Ledger) release(ctx context.Context, id, outcome string) (bool, error) {
	now := l.s.Now()
	done := false
	err := l.s.InTx(ctx, func(tx *sql.Tx) error {
		row, err := l.s.LockBudgetReservation(ctx, tx, id)
		if err != nil {
			return err
		}
		if row.Outcome != store.ReservationReserved || (outcome == store.ReservationExpired && !row.ExpiresAt.Before(now)) {
			return nil
		}
		d := store.BudgetCounters{ReservedTokens: -row.Tokens, ReservedNanoUSD: -row.NanoUSD}
		if outcome == store.ReservationReleased {
			d.FailedCalls = 1
		}
		if err := l.s.FinishBudgetReservation(ctx, tx, id, outcome, now, 0, 0); err != nil {
			return err
		}
		done = true
		return l.add(ctx, tx, row.Day, row.Keys, d, now)
	})
	return done && err == nil, err
}
