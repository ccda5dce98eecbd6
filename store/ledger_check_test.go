package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mullhq/mull/store"
)

// LedgerDeny, from two processes at once: copies of one request answer the
// first's response and count once, every other call counts once, and the
// counter is exactly the number of calls denied.
func TestLedgerDenyExactAndReplayed(t *testing.T) {
	twoProcesses(t, func(t *testing.T, a, b *store.Store) {
		ctx := context.Background()
		f := record(t, a, "c0", cmdInput("/w", "make")).Fact
		const calls, copies = 12, 4
		type answer struct {
			resp   string
			replay bool
		}
		answers := make([]answer, calls+copies)
		var wg sync.WaitGroup
		for i := range answers {
			s := a
			if i%2 == 1 {
				s = b
			}
			// The first `copies` are one request (one hash, one call);
			// the rest are a call each.
			o := store.LedgerOp{RequestHash: "h-same", Kind: "check", ToolCallID: "same", Session: "s"}
			if i >= copies {
				o = store.LedgerOp{RequestHash: fmt.Sprintf("h-%d", i), Kind: "check", ToolCallID: fmt.Sprintf("c%d", i), Session: "s"}
			}
			wg.Go(func() {
				resp, replay, err := s.LedgerDeny(ctx, o, f.ID, f.Revision, map[string]int{"i": i})
				if err != nil {
					t.Error(err)
				}
				answers[i] = answer{string(resp), replay}
			})
		}
		wg.Wait()
		first, replays := "", 0
		for _, ans := range answers[:copies] {
			if !ans.replay {
				first = ans.resp
			} else {
				replays++
			}
		}
		for _, ans := range answers[:copies] {
			if ans.resp != first {
				t.Fatalf("copies answered %+v, want every one the first's", answers[:copies])
			}
		}
		if replays != copies-1 {
			t.Fatalf("%d replays of %d copies, want %d", replays, copies, copies-1)
		}
		got, err := b.LedgerFact(ctx, f.ID)
		if err != nil || got.Savings.CallsDenied != calls+1 || got.Revision != f.Revision {
			t.Fatalf("fact = %+v, %v; want %d denies at revision %d", got.Savings, err, calls+1, f.Revision)
		}
		// Another request (another hash) of a call denied already is
		// answered, and counts nothing: the event is unique per (fact,
		// call, deny).
		resp, replay, err := a.LedgerDeny(ctx, store.LedgerOp{RequestHash: "h-again", Kind: "check", ToolCallID: "same", Session: "s"},
			f.ID, f.Revision, "again")
		if err != nil || replay || string(resp) != `"again"` {
			t.Fatalf("same call, new request = %s %v %v", resp, replay, err)
		}
		if got, _ := a.LedgerFact(ctx, f.ID); got.Savings.CallsDenied != calls+1 {
			t.Fatalf("a call denied twice counted twice: %+v", got.Savings)
		}
		if r, ok, err := b.LedgerReceipt(ctx, "h-same"); err != nil || !ok || string(r) != first {
			t.Fatalf("receipt = %s %v %v, want %s", r, ok, err, first)
		}
	})
}

// A deny decided on an old revision writes nothing: no receipt, no event,
// no count; the caller re-decides.
func TestLedgerDenyStaleRevisionConflicts(t *testing.T) {
	twoProcesses(t, func(t *testing.T, a, _ *store.Store) {
		ctx := context.Background()
		in := cmdInput("/w", "make")
		f := record(t, a, "c0", in).Fact
		g := record(t, a, "c1", in).Fact // a new evidence version
		if g.ID != f.ID || g.Revision != f.Revision+1 {
			t.Fatalf("second record = %d@%d, want %d@%d", g.ID, g.Revision, f.ID, f.Revision+1)
		}
		o := store.LedgerOp{RequestHash: "h-old", Kind: "check", ToolCallID: "c2", Session: "s"}
		if _, _, err := a.LedgerDeny(ctx, o, f.ID, f.Revision, "deny"); !errors.Is(err, store.ErrLedgerConflict) {
			t.Fatalf("deny at an old revision: %v, want ErrLedgerConflict", err)
		}
		if _, ok, _ := a.LedgerReceipt(ctx, "h-old"); ok {
			t.Fatal("a conflicting deny stored its receipt")
		}
		if got, _ := a.LedgerFact(ctx, f.ID); got.Savings.CallsDenied != 0 {
			t.Fatalf("a conflicting deny counted: %+v", got.Savings)
		}
		// The commit failpoint's error leaves nothing written either.
		store.SetFailpointError(func(name string) error {
			if name == store.FailpointLedgerCommit {
				return fmt.Errorf("test: %w", store.ErrLedgerConflict)
			}
			return nil
		})
		_, _, err := a.LedgerDeny(ctx, o, g.ID, g.Revision, "deny")
		store.SetFailpointError(nil)
		if !errors.Is(err, store.ErrLedgerConflict) {
			t.Fatalf("deny with a failing commit: %v, want ErrLedgerConflict", err)
		}
		if got, _ := a.LedgerFact(ctx, f.ID); got.Savings.CallsDenied != 0 {
			t.Fatalf("a rolled-back deny counted: %+v", got.Savings)
		}
		if _, replay, err := a.LedgerDeny(ctx, o, g.ID, g.Revision, "deny"); err != nil || replay {
			t.Fatalf("deny at the current revision: %v %v", replay, err)
		}
		if got, _ := a.LedgerFact(ctx, f.ID); got.Savings.CallsDenied != 1 {
			t.Fatalf("deny at the current revision: %+v, want 1", got.Savings)
		}
	})
}
