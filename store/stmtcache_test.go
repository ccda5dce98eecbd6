package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestStatementCache runs, on SQLite's one connection, a statement again
// while its first rows are still being read, and more distinct statements
// than the cache holds while rows of one are open: every result is right,
// and the open rows read on undisturbed.
func TestStatementCache(t *testing.T) {
	s := storetest.New(t, store.SQLite)
	ctx := context.Background()
	const count = `with recursive n(i) as (select 1 union all select i + 1 from n where i < $1) select i from n`
	err := s.InTx(ctx, func(tx *sql.Tx) error {
		outer, err := tx.QueryContext(ctx, count, 3)
		if err != nil {
			return err
		}
		defer outer.Close()
		want := 1
		for outer.Next() {
			var i int
			if err := outer.Scan(&i); err != nil {
				return err
			}
			if i != want {
				return fmt.Errorf("outer row %d, want %d", i, want)
			}
			want++
			// The same text while the outer rows are open, and then enough
			// others to go round the cache.
			if got := sumOf(ctx, t, tx, count, 4); got != 10 {
				return fmt.Errorf("inner sum %d, want 10", got)
			}
			for k := range 300 {
				var v int
				if err := tx.QueryRowContext(ctx, fmt.Sprintf("select %d + $1", k), 1).Scan(&v); err != nil {
					return err
				}
				if v != k+1 {
					return fmt.Errorf("select %d + 1 = %d", k, v)
				}
			}
		}
		if want != 4 {
			return fmt.Errorf("outer read %d rows, want 3", want-1)
		}
		return outer.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := sumOf(ctx, t, s.DB, count, 5); got != 15 {
		t.Fatalf("sum after the transaction %d, want 15", got)
	}
}

func sumOf(ctx context.Context, t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, n int,
) int {
	t.Helper()
	rows, err := q.QueryContext(ctx, query, n)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sum := 0
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			t.Fatal(err)
		}
		sum += i
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}
