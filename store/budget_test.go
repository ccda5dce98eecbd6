package store_test

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func inTx(t *testing.T, s *store.Store, fn func(tx *sql.Tx) error) {
	t.Helper()
	if err := s.InTx(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func TestBudgetUsageRows(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		inTx(t, s, func(tx *sql.Tx) error {
			rows, err := s.LockBudgetUsage(ctx, tx, "2026-03-01", []string{"workspace:/a", "global", "kind:k", "global"}, now)
			if err != nil {
				return err
			}
			var keys []string
			for _, r := range rows {
				keys = append(keys, r.Key)
				if r.Day != "2026-03-01" || r.BudgetCounters != (store.BudgetCounters{}) || !r.UpdatedAt.Equal(now) {
					t.Errorf("new row = %+v", r)
				}
			}
			if want := []string{"kind:k", "workspace:/a", "global"}; !reflect.DeepEqual(keys, want) {
				t.Errorf("locked %v, want %v in lock order (global last), once each", keys, want)
			}
			d := store.BudgetCounters{ReservedTokens: 10, SpentTokens: 3, Calls: 1, CacheHitTokens: 2, SpentNanoUSD: 7}
			if err := s.AddBudgetUsage(ctx, tx, "2026-03-01", []string{"global"}, d, now.Add(time.Second)); err != nil {
				return err
			}
			d.ReservedTokens = -4
			if err := s.AddBudgetUsage(ctx, tx, "2026-03-01", []string{"global"}, d, now.Add(2*time.Second)); err != nil {
				return err
			}
			return s.AddBudgetUsage(ctx, tx, "2026-03-01", []string{"kind:k", "workspace:/a"}, store.BudgetCounters{Calls: 5}, now)
		})
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			return s.AddBudgetUsage(ctx, tx, "2026-03-02", []string{"global"}, store.BudgetCounters{Calls: 1}, now)
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("add to a missing day row: %v, want ErrNotFound", err)
		}

		inTx(t, s, func(tx *sql.Tx) error {
			_, err := s.PutBudgetLimit(ctx, tx, store.BudgetLimit{Key: "global", Tokens: 100, Source: store.BudgetFromConfig, UpdatedAt: now})
			return err
		})
		limits, usage, err := s.BudgetDay(ctx, "2026-03-01")
		if err != nil {
			t.Fatal(err)
		}
		if len(limits) != 1 || limits[0].Key != "global" || limits[0].Tokens != 100 {
			t.Fatalf("limits = %+v", limits)
		}
		g := usage[0]
		want := store.BudgetCounters{ReservedTokens: 6, SpentTokens: 6, Calls: 2, CacheHitTokens: 4, SpentNanoUSD: 14}
		if len(usage) != 3 || g.Key != "global" || g.BudgetCounters != want || !g.UpdatedAt.Equal(now.Add(2*time.Second)) {
			t.Fatalf("usage = %+v; want global first with %+v", usage, want)
		}
		if usage[1].Calls != 5 || usage[2].Calls != 5 {
			t.Fatalf("one statement for two keys: %+v", usage[1:])
		}
		if _, usage, _ := s.BudgetDay(ctx, "2026-02-28"); len(usage) != 0 {
			t.Fatalf("another day has usage %+v", usage)
		}
	})
}

func TestBudgetLockOrder(t *testing.T) {
	got := store.BudgetLockOrder([]string{"workspace:/b", "global", "kind:x", "workspace:/a", "kind:x"})
	if want := []string{"kind:x", "workspace:/a", "workspace:/b", "global"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lock order %v, want %v", got, want)
	}
}

func TestBudgetLimitSources(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		put := func(key string, tokens int64, source string) bool {
			t.Helper()
			var wrote bool
			inTx(t, s, func(tx *sql.Tx) (err error) {
				wrote, err = s.PutBudgetLimit(ctx, tx, store.BudgetLimit{Key: key, Tokens: tokens, NanoUSD: tokens * 10, Source: source, UpdatedAt: now})
				return err
			})
			return wrote
		}
		limitOf := func(key string) (store.BudgetLimit, bool) {
			t.Helper()
			var got []store.BudgetLimit
			inTx(t, s, func(tx *sql.Tx) (err error) {
				got, err = s.BudgetLimits(ctx, tx, key)
				return err
			})
			if len(got) == 0 {
				return store.BudgetLimit{}, false
			}
			return got[0], true
		}
		if !put("global", 100, store.BudgetFromConfig) || !put("global", 200, store.BudgetFromConfig) {
			t.Fatal("config did not write over config")
		}
		if !put("global", 300, store.BudgetFromOperator) {
			t.Fatal("operator did not write over config")
		}
		if put("global", 400, store.BudgetFromConfig) {
			t.Fatal("config wrote over an operator limit")
		}
		if l, _ := limitOf("global"); l.Tokens != 300 || l.NanoUSD != 3000 || l.Source != store.BudgetFromOperator || !l.UpdatedAt.Equal(now) {
			t.Fatalf("global = %+v, want the operator's 300", l)
		}
		var deleted bool
		inTx(t, s, func(tx *sql.Tx) (err error) {
			if deleted, err = s.DeleteBudgetLimit(ctx, tx, "global", store.BudgetFromConfig); err != nil || deleted {
				t.Errorf("deleting as config removed the operator's row: %v %v", deleted, err)
			}
			deleted, err = s.DeleteBudgetLimit(ctx, tx, "global", store.BudgetFromOperator)
			return err
		})
		if _, ok := limitOf("global"); !deleted || ok {
			t.Fatal("operator row not deleted")
		}
	})
}

func TestBudgetReservations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
		r := store.BudgetReservation{
			ID: "rsv_1", Day: "2026-03-01", Keys: []string{"global", `workspace:/a "b", c`}, Tokens: 300, NanoUSD: 5,
			JobID: 42, Kind: "k", Workspace: `/a "b", c`, CreatedAt: now, ExpiresAt: now.Add(time.Minute),
		}
		inTx(t, s, func(tx *sql.Tx) error {
			if err := s.InsertBudgetReservation(ctx, tx, r); err != nil {
				return err
			}
			r2 := r
			r2.ID, r2.JobID, r2.ExpiresAt = "rsv_2", 0, now.Add(2*time.Minute)
			return s.InsertBudgetReservation(ctx, tx, r2)
		})
		for _, tc := range []struct {
			at   time.Time
			want []string
		}{
			{now.Add(time.Minute), nil},
			{now.Add(time.Minute + time.Microsecond), []string{"rsv_1"}},
			{now.Add(time.Hour), []string{"rsv_1", "rsv_2"}},
		} {
			got, err := s.ExpiredBudgetReservations(ctx, tc.at, 10)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("expired at %s = %v, %v; want %v", tc.at, got, err, tc.want)
			}
		}
		inTx(t, s, func(tx *sql.Tx) error {
			got, err := s.LockBudgetReservation(ctx, tx, "rsv_1")
			if err != nil {
				return err
			}
			r.Outcome = store.ReservationReserved
			if !reflect.DeepEqual(got, r) {
				t.Errorf("read back\n%+v\nwant\n%+v", got, r)
			}
			return s.FinishBudgetReservation(ctx, tx, "rsv_1", store.ReservationSettled, now.Add(time.Second), 250, 4)
		})
		inTx(t, s, func(tx *sql.Tx) error {
			got, err := s.LockBudgetReservation(ctx, tx, "rsv_1")
			if err != nil {
				return err
			}
			if got.Outcome != store.ReservationSettled || got.ActualTokens != 250 || got.ActualNanoUSD != 4 ||
				got.FinishedAt == nil || !got.FinishedAt.Equal(now.Add(time.Second)) {
				t.Errorf("settled = %+v", got)
			}
			if _, err := s.LockBudgetReservation(ctx, tx, "rsv_nope"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("unknown reservation: %v, want ErrNotFound", err)
			}
			return nil
		})
		if got, _ := s.ExpiredBudgetReservations(ctx, now.Add(time.Hour), 10); !reflect.DeepEqual(got, []string{"rsv_2"}) {
			t.Fatalf("expired after settling rsv_1 = %v", got)
		}
	})
}

// TestBudgetUsageLockBlocks checks that on Postgres a second transaction
// cannot read a key's row for update while the first holds it. (SQLite's
// single write transaction needs no test of its own.)
func TestBudgetUsageLockBlocks(t *testing.T) {
	s := storetest.New(t, store.Postgres)
	ctx := context.Background()
	now := time.Now()
	// The row exists already, so only select … for update can make the
	// second transaction wait (not the first one's uncommitted insert).
	inTx(t, s, func(tx *sql.Tx) error {
		_, err := s.LockBudgetUsage(ctx, tx, "d", []string{"global"}, now)
		return err
	})
	tx1, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	if _, err := s.LockBudgetUsage(ctx, tx1, "d", []string{"global"}, now); err != nil {
		t.Fatal(err)
	}
	second := func(ctx context.Context) error {
		return s.InTx(ctx, func(tx *sql.Tx) error {
			_, err := s.LockBudgetUsage(ctx, tx, "d", []string{"global"}, now)
			return err
		})
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := second(short); err == nil {
		t.Fatal("a second transaction locked the row while the first held it")
	}
	if err := tx1.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := second(ctx); err != nil {
		t.Fatalf("after the first committed: %v", err)
	}
}
