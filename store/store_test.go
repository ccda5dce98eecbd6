package store_test

import (
	"context"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestMigrateIsIdempotent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		steps, err := s.Migrate(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) != 0 {
			t.Fatalf("second migrate applied %d steps, want 0: %+v", len(steps), steps)
		}
		n, err := s.MigrationsPending(ctx)
		if err != nil || n != 0 {
			t.Fatalf("MigrationsPending = %d, %v; want 0, nil", n, err)
		}
	})
}

func TestMigrateDryRunChangesNothing(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s, err := store.Open(ctx, storetest.Database(t, dialect))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			planned, err := s.Migrate(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(planned) == 0 {
				t.Fatal("dry run on an empty database planned nothing")
			}
			applied, err := s.Migrate(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(applied) != len(planned) {
				t.Fatalf("dry run planned %d steps but migrate applied %d", len(planned), len(applied))
			}
		})
	}
}
