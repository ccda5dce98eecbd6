package benches_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// FreezeSet freezes the set's drafts and returns them, hashed; a case
// already frozen and other sets are left alone; freezing again freezes
// none; a set with no case or a bad set name is an error.
func TestFreezeSet(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc := newEnv(t, s, config.Bench{}, false, fixed(50)).svc
		for _, c := range []benches.CaseInput{{ID: "a", Set: "demo"}, {ID: "b", Set: "demo"}, {ID: "c", Set: "demo"}, {ID: "x", Set: "other"}} {
			c.Title, c.Statement, c.Rubric = "t", "s", "r"
			if _, err := svc.AddCase(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := svc.FreezeCase(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		got, err := svc.FreezeSet(ctx, " demo ")
		if err != nil || len(got) != 2 || got[0].ID != "a" || got[1].ID != "c" {
			t.Fatalf("FreezeSet = %+v, %v; want a and c", got, err)
		}
		for _, c := range got {
			if c.State != bench.Frozen || c.Hash != bench.CaseHash(c) || c.FrozenAt == nil {
				t.Errorf("returned %+v, want frozen with its hash", c)
			}
		}
		if x, err := svc.Cases(ctx, benches.CaseFilter{Set: "other", State: bench.Draft}); err != nil || len(x) != 1 {
			t.Errorf("other set's drafts %+v, %v: want x untouched", x, err)
		}
		if again, err := svc.FreezeSet(ctx, "demo"); err != nil || len(again) != 0 {
			t.Errorf("again = %+v, %v; want none frozen, no error", again, err)
		}
		if _, err := svc.FreezeSet(ctx, "nope"); codeOf(err) != "benchmark:freeze:set-not-found" || !errors.Is(err, benches.ErrNotFound) {
			t.Errorf("unknown set: %v", err)
		}
		var fe *benches.FieldError
		if _, err := svc.FreezeSet(ctx, ""); !errors.As(err, &fe) || fe.Field != "set" {
			t.Errorf("empty set: %v, want a FieldError naming set", err)
		}
	})
}

// A set is frozen whole or not at all: when one case's freeze fails (a
// trigger refuses it here), the drafts frozen before it in the same call
// stay drafts.
func TestFreezeSetIsAtomic(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc := newEnv(t, s, config.Bench{}, false, fixed(50)).svc
		for _, id := range []string{"a", "b"} {
			if _, err := svc.AddCase(ctx, benches.CaseInput{ID: id, Set: "demo", Title: "t", Statement: "s", Rubric: "r"}); err != nil {
				t.Fatal(err)
			}
		}
		refuse := []string{`create trigger refuse_b before update on bench_cases for each row when (new.id = 'b')
			begin select raise(abort, 'refused'); end`}
		if s.Dialect == store.Postgres {
			refuse = []string{`create function refuse_b() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$`,
				`create trigger refuse_b before update on bench_cases for each row when (new.id = 'b') execute function refuse_b()`}
		}
		for _, q := range refuse {
			if _, err := s.DB.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := svc.FreezeSet(ctx, "demo"); err == nil {
			t.Fatalf("FreezeSet = %+v, want the refusal", got)
		}
		if d, err := svc.Cases(ctx, benches.CaseFilter{Set: "demo", State: bench.Draft}); err != nil || len(d) != 2 {
			t.Errorf("drafts after the failed freeze: %+v, %v; want both", d, err)
		}
	})
}
