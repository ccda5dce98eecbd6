package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Where a budget limit comes from. Config rows are rewritten from the config
// file at startup; operator rows (`mull budget set`) survive that until unset.
const (
	BudgetFromConfig   = "config"
	BudgetFromOperator = "operator"
)

// Outcomes of a budget reservation. Only a reserved one still holds tokens.
const (
	ReservationReserved = "reserved"
	ReservationSettled  = "settled"
	ReservationReleased = "released"
	// ReservationExpired was never settled before its deadline (its process
	// died) and was released by the sweeper. A late settle still records
	// what the call used.
	ReservationExpired = "expired"
)

// BudgetLimit is one key's daily limit. Zero in a unit means no limit in it.
type BudgetLimit struct {
	Key       string
	Tokens    int64
	NanoUSD   int64
	Source    string
	UpdatedAt time.Time
}

// BudgetCounters are the numbers a key accumulates over a day. As a delta
// (AddBudgetUsage) each field is added to the stored one, negative or not.
type BudgetCounters struct {
	ReservedTokens   int64
	SpentTokens      int64
	ReservedNanoUSD  int64
	SpentNanoUSD     int64
	Calls            int64
	FailedCalls      int64
	Refused          int64
	Overruns         int64
	PromptTokens     int64
	CompletionTokens int64
	CacheHitTokens   int64
	CacheMissTokens  int64
}

// BudgetUsage is one key's row for one budget day.
type BudgetUsage struct {
	Key string
	// Day is YYYY-MM-DD in the budget zone.
	Day string
	BudgetCounters
	UpdatedAt time.Time
}

// BudgetReservation is tokens (and money) held for one LLM call until it is
// settled, released, or expires.
type BudgetReservation struct {
	ID  string
	Day string
	// Keys are the usage keys held, sorted.
	Keys      []string
	Tokens    int64
	NanoUSD   int64
	JobID     int64
	Kind      string
	Workspace string
	CreatedAt time.Time
	ExpiresAt time.Time
	Outcome   string
	// FinishedAt is when it left the reserved outcome.
	FinishedAt *time.Time
	// ActualTokens and ActualNanoUSD are what a settled call used.
	ActualTokens  int64
	ActualNanoUSD int64
}

const (
	usageColumns = `key, day, reserved_tokens, spent_tokens, reserved_nano_usd, spent_nano_usd,
		calls, failed_calls, refused, overruns, prompt_tokens, completion_tokens,
		cache_hit_tokens, cache_miss_tokens, updated_at`
	reservationColumns = `id, day, keys, tokens, nano_usd, job_id, kind, workspace,
		created_at, expires_at, outcome, finished_at, actual_tokens, actual_nano_usd`
)

// BudgetLimits reads the limits of some keys, or of every key when none are
// given, ordered by key.
func (s *Store) BudgetLimits(ctx context.Context, tx *sql.Tx, keys ...string) ([]BudgetLimit, error) {
	q := `select key, tokens, nano_usd, source, updated_at from budget_limits`
	args := make([]any, len(keys))
	if len(keys) > 0 {
		for i, k := range keys {
			args[i] = k
		}
		q += ` where key in (` + numberedMarks(1, len(keys)) + `)`
	}
	return budgetLimits(ctx, tx, q+` order by key`, args...)
}

func budgetLimits(ctx context.Context, q querier, query string, args ...any) ([]BudgetLimit, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("budget limits: %w", err)
	}
	defer rows.Close()
	var out []BudgetLimit
	for rows.Next() {
		var l BudgetLimit
		if err := rows.Scan(&l.Key, &l.Tokens, &l.NanoUSD, &l.Source, &l.UpdatedAt); err != nil {
			return nil, fmt.Errorf("budget limits: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// PutBudgetLimit writes a key's limit. An operator limit always wins; a
// config limit replaces only a config limit, so that a restart does not undo
// an operator's `mull budget set`. It reports whether the row was written.
func (s *Store) PutBudgetLimit(ctx context.Context, tx *sql.Tx, l BudgetLimit) (bool, error) {
	res, err := tx.ExecContext(ctx, `insert into budget_limits (key, tokens, nano_usd, source, updated_at)
		values ($1, $2, $3, $4, $5)
		on conflict (key) do update set tokens = excluded.tokens, nano_usd = excluded.nano_usd,
			source = excluded.source, updated_at = excluded.updated_at
		where budget_limits.source = $6 or excluded.source = $7`,
		l.Key, l.Tokens, l.NanoUSD, l.Source, l.UpdatedAt.UTC(), BudgetFromConfig, BudgetFromOperator)
	if err != nil {
		return false, fmt.Errorf("put budget limit %s: %w", l.Key, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// DeleteBudgetLimit removes a key's limit if it has that source, and reports
// whether there was one.
func (s *Store) DeleteBudgetLimit(ctx context.Context, tx *sql.Tx, key, source string) (bool, error) {
	res, err := tx.ExecContext(ctx, `delete from budget_limits where key = $1 and source = $2`, key, source)
	if err != nil {
		return false, fmt.Errorf("delete budget limit %s: %w", key, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// BudgetLockOrder sorts budget keys into the one order every transaction
// takes their rows in, so that two never wait on each other in a cycle:
// by key, except "global", which every call holds, comes last, so that the
// hottest row is held for the shortest time.
func BudgetLockOrder(keys []string) []string {
	out := slices.Compact(slices.Sorted(slices.Values(keys)))
	if i := slices.Index(out, "global"); i >= 0 {
		out = append(slices.Delete(out, i, i+1), "global")
	}
	return out
}

// LockBudgetUsage returns the day's usage rows of keys, creating the missing
// ones, and holds them until tx ends: on Postgres each row is locked with
// select … for update, one key at a time in BudgetLockOrder; on SQLite the
// immediate write transaction already excludes every other writer. The rows
// come back in that order.
func (s *Store) LockBudgetUsage(ctx context.Context, tx *sql.Tx, day string, keys []string, now time.Time) ([]BudgetUsage, error) {
	q := `select ` + usageColumns + ` from budget_usage where key = $1 and day = $2`
	if s.Dialect == Postgres {
		q += ` for update`
	}
	var out []BudgetUsage
	for _, k := range BudgetLockOrder(keys) {
		u, err := scanUsage(tx.QueryRowContext(ctx, q, k, day))
		if errors.Is(err, sql.ErrNoRows) {
			// The day's first call on k: create the row (or wait for the
			// transaction creating it), then lock it.
			if _, err := tx.ExecContext(ctx, `insert into budget_usage (key, day, updated_at) values ($1, $2, $3)
				on conflict (key, day) do nothing`, k, day, now.UTC()); err != nil {
				return nil, fmt.Errorf("budget usage %s %s: %w", k, day, err)
			}
			u, err = scanUsage(tx.QueryRowContext(ctx, q, k, day))
		}
		if err != nil {
			return nil, fmt.Errorf("lock budget usage %s %s: %w", k, day, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// AddBudgetUsage adds d to the day's rows of keys, which must exist, in one
// statement. On Postgres the update locks each row in no set order: a
// caller either holds the rows already (LockBudgetUsage) or passes one key
// at a time in BudgetLockOrder.
func (s *Store) AddBudgetUsage(ctx context.Context, tx *sql.Tx, day string, keys []string, d BudgetCounters, now time.Time) error {
	args := []any{day, d.ReservedTokens, d.SpentTokens, d.ReservedNanoUSD, d.SpentNanoUSD,
		d.Calls, d.FailedCalls, d.Refused, d.Overruns, d.PromptTokens, d.CompletionTokens,
		d.CacheHitTokens, d.CacheMissTokens, now.UTC()}
	keys = BudgetLockOrder(keys)
	for _, k := range keys {
		args = append(args, k)
	}
	res, err := tx.ExecContext(ctx, `update budget_usage set
		reserved_tokens = reserved_tokens + $2, spent_tokens = spent_tokens + $3,
		reserved_nano_usd = reserved_nano_usd + $4, spent_nano_usd = spent_nano_usd + $5,
		calls = calls + $6, failed_calls = failed_calls + $7, refused = refused + $8, overruns = overruns + $9,
		prompt_tokens = prompt_tokens + $10, completion_tokens = completion_tokens + $11,
		cache_hit_tokens = cache_hit_tokens + $12, cache_miss_tokens = cache_miss_tokens + $13,
		updated_at = $14
		where day = $1 and key in (`+numberedMarks(15, len(keys))+`)`, args...)
	if err != nil {
		return fmt.Errorf("add budget usage %v %s: %w", keys, day, err)
	}
	n, err := res.RowsAffected()
	if err == nil && n != int64(len(keys)) {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("add budget usage %v %s: %w", keys, day, err)
	}
	return nil
}

// BudgetDay reads every limit and a day's usage rows, both ordered by key,
// in one read transaction.
func (s *Store) BudgetDay(ctx context.Context, day string) (limits []BudgetLimit, usage []BudgetUsage, err error) {
	err = s.readTx(ctx, func(tx *sql.Tx) error {
		if limits, err = s.BudgetLimits(ctx, tx); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `select `+usageColumns+` from budget_usage where day = $1 order by key`, day)
		if err != nil {
			return fmt.Errorf("budget usage %s: %w", day, err)
		}
		defer rows.Close()
		for rows.Next() {
			u, err := scanUsage(rows)
			if err != nil {
				return fmt.Errorf("budget usage %s: %w", day, err)
			}
			usage = append(usage, u)
		}
		return rows.Err()
	})
	return limits, usage, err
}

// InsertBudgetReservation records a reservation in the reserved outcome.
func (s *Store) InsertBudgetReservation(ctx context.Context, tx *sql.Tx, r BudgetReservation) error {
	keys, _ := json.Marshal(r.Keys) // a []string always marshals
	if _, err := tx.ExecContext(ctx, `insert into budget_reservations
		(id, day, keys, tokens, nano_usd, job_id, kind, workspace, created_at, expires_at, outcome)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		r.ID, r.Day, string(keys), r.Tokens, r.NanoUSD, sql.NullInt64{Int64: r.JobID, Valid: r.JobID != 0},
		r.Kind, r.Workspace, r.CreatedAt.UTC(), r.ExpiresAt.UTC(), ReservationReserved); err != nil {
		return fmt.Errorf("insert budget reservation %s: %w", r.ID, err)
	}
	return nil
}

// DeleteBudgetReservation removes a reservation, inside the transaction
// that inserted it, when it turns out not to fit.
func (s *Store) DeleteBudgetReservation(ctx context.Context, tx *sql.Tx, id string) error {
	if _, err := tx.ExecContext(ctx, `delete from budget_reservations where id = $1`, id); err != nil {
		return fmt.Errorf("delete budget reservation %s: %w", id, err)
	}
	return nil
}

// LockBudgetReservation reads a reservation and, on Postgres, locks it until
// tx ends, so that a settle and a release of the same one run one after the
// other and the second sees the first's outcome.
func (s *Store) LockBudgetReservation(ctx context.Context, tx *sql.Tx, id string) (BudgetReservation, error) {
	q := `select ` + reservationColumns + ` from budget_reservations where id = $1`
	if s.Dialect == Postgres {
		q += ` for update`
	}
	r, err := scanReservation(tx.QueryRowContext(ctx, q, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("budget reservation %s: %w", id, ErrNotFound)
	}
	return r, err
}

// FinishBudgetReservation moves a reservation to outcome (settled, released
// or expired); actual tokens and nano-USD are recorded for a settled one.
func (s *Store) FinishBudgetReservation(ctx context.Context, tx *sql.Tx, id, outcome string, at time.Time, actualTokens, actualNanoUSD int64) error {
	var tok, usd sql.NullInt64
	if outcome == ReservationSettled {
		tok, usd = sql.NullInt64{Int64: actualTokens, Valid: true}, sql.NullInt64{Int64: actualNanoUSD, Valid: true}
	}
	if _, err := tx.ExecContext(ctx, `update budget_reservations
		set outcome = $2, finished_at = $3, actual_tokens = $4, actual_nano_usd = $5 where id = $1`,
		id, outcome, at.UTC(), tok, usd); err != nil {
		return fmt.Errorf("finish budget reservation %s: %w", id, err)
	}
	return nil
}

// ExpiredBudgetReservations lists up to limit reservations still held whose
// deadline is before now, oldest deadline first.
func (s *Store) ExpiredBudgetReservations(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := s.DB.QueryContext(ctx, `select id from budget_reservations
		where outcome = $1 and expires_at < $2 order by expires_at, id limit $3`,
		ReservationReserved, now.UTC(), limit)
	if err != nil {
		return nil, fmt.Errorf("expired budget reservations: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("expired budget reservations: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func scanUsage(row scanner) (BudgetUsage, error) {
	var u BudgetUsage
	c := &u.BudgetCounters
	err := row.Scan(&u.Key, &u.Day, &c.ReservedTokens, &c.SpentTokens, &c.ReservedNanoUSD, &c.SpentNanoUSD,
		&c.Calls, &c.FailedCalls, &c.Refused, &c.Overruns, &c.PromptTokens, &c.CompletionTokens,
		&c.CacheHitTokens, &c.CacheMissTokens, &u.UpdatedAt)
	u.UpdatedAt = u.UpdatedAt.UTC()
	return u, err
}

func scanReservation(row scanner) (BudgetReservation, error) {
	var r BudgetReservation
	var keys string
	var job, tok, usd sql.NullInt64
	var finished sql.NullTime
	err := row.Scan(&r.ID, &r.Day, &keys, &r.Tokens, &r.NanoUSD, &job, &r.Kind, &r.Workspace,
		&r.CreatedAt, &r.ExpiresAt, &r.Outcome, &finished, &tok, &usd)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(keys), &r.Keys); err != nil {
		return r, fmt.Errorf("budget reservation %s: keys: %w", r.ID, err)
	}
	r.JobID, r.ActualTokens, r.ActualNanoUSD = job.Int64, tok.Int64, usd.Int64
	r.CreatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC()
	if finished.Valid {
		t := finished.Time.UTC()
		r.FinishedAt = &t
	}
	return r, nil
}

// numberedMarks is "$from, $from+1, …", n of them.
func numberedMarks(from, n int) string {
	marks := make([]string, n)
	for i := range marks {
		marks[i] = "$" + strconv.Itoa(from+i)
	}
	return strings.Join(marks, ", ")
}
