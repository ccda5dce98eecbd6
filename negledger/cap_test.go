package negledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Explicit facts recorded at once near the cap: exactly as many as fit are
// recorded, the others refused, and the workspace ends at ExplicitMax, not
// one over (on Postgres two transactions would each count one short).
func TestExplicitCapExactUnderRace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		ctx := context.Background()
		h.known("s1", "/w")
		const racers, room = 8, 3
		for i := range ExplicitMax - room {
			if _, err := h.svc.Record(ctx, explicit(fmt.Sprintf("op-%d", i), "s1", "/w", fmt.Sprintf("https://api/%d", i))); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				_, errs[i] = h.svc.Record(ctx, explicit(fmt.Sprintf("race-%d", i), "s1", "/w", fmt.Sprintf("https://race/%d", i)))
			})
		}
		wg.Wait()
		recorded := 0
		for _, err := range errs {
			var fe *FieldError
			switch {
			case err == nil:
				recorded++
			case !errors.As(err, &fe) || fe.Field != "workspace":
				t.Fatalf("a racing record: %v, want recorded or refused at the cap", err)
			}
		}
		var n int
		if err := s.DB.QueryRow(`select count(*) from ledger_facts where scope = '/w' and is_current and source = 'api'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if recorded != room || n != ExplicitMax {
			t.Fatalf("%d of %d racers recorded, %d explicit facts; want %d and %d", recorded, racers, n, room, ExplicitMax)
		}
	})
}
