package store_test

import (
	"context"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Analyze refreshes the named tables' statistics on Postgres, does nothing
// on SQLite, and refuses a name that is not a table's.
func TestAnalyze(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.Analyze(ctx, "events; drop table events"); err == nil {
			t.Fatal("a statement was taken as a table name")
		}
		if err := s.Analyze(ctx, store.ImportTables...); err != nil {
			t.Fatal(err)
		}
		if s.Dialect != store.Postgres {
			return
		}
		for _, table := range store.ImportTables {
			if !storetest.Analyzed(t, s, table) {
				t.Errorf("%s not analyzed", table)
			}
		}
		if storetest.Analyzed(t, s, "memories") {
			t.Error("memories analyzed, though not named")
		}
	})
}
