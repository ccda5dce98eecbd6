package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestErrorRetro(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 6, 123456000, time.UTC)
		if _, ok, err := s.GetErrorRetro(ctx, s.DB, "s1"); ok || err != nil {
			t.Fatalf("before any: %v, %v", ok, err)
		}
		for i, at := range []time.Time{t0, t0.Add(time.Minute)} {
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				return s.PutErrorRetro(ctx, tx, store.ErrorRetro{SessionID: "s1", Count: i + 1, LastScheduledAt: at})
			}); err != nil {
				t.Fatal(err)
			}
		}
		r, ok, err := s.GetErrorRetro(ctx, s.DB, "s1")
		if !ok || err != nil || r.Count != 2 || !r.LastScheduledAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("error retro %+v, %v, %v", r, ok, err)
		}
		if _, ok, err := s.SessionPrimary(ctx, s.DB, "nope"); ok || err != nil {
			t.Fatalf("SessionPrimary of a missing session: %v, %v", ok, err)
		}
	})
}
