package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
)

// ErrBadLimit is wrapped by errors about an invalid key or amount given to
// SetLimit or UnsetLimit.
var ErrBadLimit = errors.New("bad budget limit")

// SyncConfig writes the config's limits to the database: a key an operator
// set at runtime keeps the operator's limit, and config limits no longer in
// the config are removed. Run it once at startup.
func (l *Ledger) SyncConfig(ctx context.Context) error {
	now := l.s.Now()
	err := l.s.InTx(ctx, func(tx *sql.Tx) error {
		for _, k := range slices.Sorted(maps.Keys(l.cfg.Limits)) {
			if _, err := l.s.PutBudgetLimit(ctx, tx, l.configLimit(k, now)); err != nil {
				return err
			}
		}
		rows, err := l.s.BudgetLimits(ctx, tx)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if _, keep := l.cfg.Limits[r.Key]; keep || r.Source != store.BudgetFromConfig {
				continue
			}
			if _, err := l.s.DeleteBudgetLimit(ctx, tx, r.Key, store.BudgetFromConfig); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("budget: sync config limits: %w", err)
	}
	return nil
}

// SetLimit overrides a key's daily limit at runtime, for this process and
// every other one on the database, from their next Reserve; it survives
// SyncConfig until UnsetLimit. Zero in a unit means no limit in it.
func (l *Ledger) SetLimit(ctx context.Context, key string, tokens int64, usd float64) error {
	if err := config.ValidateBudgetKey(key); err != nil {
		return fmt.Errorf("%w: %v", ErrBadLimit, err)
	}
	if tokens < 0 {
		return fmt.Errorf("%w: %s: tokens must not be negative, got %d", ErrBadLimit, key, tokens)
	}
	if usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) || usd > math.MaxInt64/1e9 {
		return fmt.Errorf("%w: %s: usd must be a finite amount ≥ 0, got %g", ErrBadLimit, key, usd)
	}
	lim := store.BudgetLimit{Key: key, Tokens: tokens, NanoUSD: NanoUSD(usd), Source: store.BudgetFromOperator, UpdatedAt: l.s.Now()}
	err := l.s.InTx(ctx, func(tx *sql.Tx) error {
		_, err := l.s.PutBudgetLimit(ctx, tx, lim)
		return err
	})
	if err != nil {
		return fmt.Errorf("budget: set limit: %w", err)
	}
	return nil
}

// UnsetLimit removes an operator's limit on a key: the key goes back to its
// limit in this ledger's config, or to none (for a workspace, to the
// workspace:* default) when the config has none.
func (l *Ledger) UnsetLimit(ctx context.Context, key string) error {
	if err := config.ValidateBudgetKey(key); err != nil {
		return fmt.Errorf("%w: %v", ErrBadLimit, err)
	}
	now := l.s.Now()
	err := l.s.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := l.s.DeleteBudgetLimit(ctx, tx, key, store.BudgetFromOperator); err != nil {
			return err
		}
		if _, ok := l.cfg.Limits[key]; !ok {
			return nil
		}
		_, err := l.s.PutBudgetLimit(ctx, tx, l.configLimit(key, now))
		return err
	})
	if err != nil {
		return fmt.Errorf("budget: unset limit: %w", err)
	}
	return nil
}

func (l *Ledger) configLimit(key string, now time.Time) store.BudgetLimit {
	c := l.cfg.Limits[key]
	return store.BudgetLimit{Key: key, Tokens: c.Tokens, NanoUSD: NanoUSD(c.USD), Source: store.BudgetFromConfig, UpdatedAt: now}
}
