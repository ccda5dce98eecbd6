package budget_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A workspace's own budget (WithWorkspaceBudget) is its key's token limit,
// asked at every Reserve: lowering it refuses that workspace's next call,
// another workspace keeps the workspace:* default, 0 lifts the limit, and
// the key's money limit stays.
func TestWorkspaceBudgetAtEveryReserve(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var own atomic.Int64
		own.Store(-1) // none
		opt := budget.WithWorkspaceBudget(func(ws string) (int64, bool) {
			if n := own.Load(); ws == "/a" && n >= 0 {
				return n, true
			}
			return 0, false
		})
		l, _ := newLedger(t, s, "UTC", map[string]config.Limit{"workspace:*": tokens(10000),
			"workspace:/a": {Tokens: 10000, USD: 0.000001}}, opt)
		reserve(t, l, budget.Request{Workspace: "/a", Tokens: 900})
		own.Store(1000)
		_, err := l.Reserve(ctx, budget.Request{Workspace: "/a", Tokens: 200})
		var ex *budget.ExhaustedError
		if !errors.As(err, &ex) || ex.Key != "workspace:/a" || ex.Limit != 1000 {
			t.Fatalf("over its own budget: %v", err)
		}
		reserve(t, l, budget.Request{Workspace: "/b", Tokens: 5000})
		own.Store(0)
		reserve(t, l, budget.Request{Workspace: "/a", Tokens: 50000})
		// The money limit of the key still holds.
		_, err = l.Reserve(ctx, budget.Request{Workspace: "/a", Tokens: 1, NanoUSD: 5000})
		if !errors.As(err, &ex) || ex.Unit != budget.UnitUSD {
			t.Fatalf("money limit: %v", err)
		}
	})
}

// What the reports and a key's state say of a workspace with a budget of
// its own is what the next reservation is held to: its limit, source
// "workspace", and what is left of it (Exhausted too).
func TestWorkspaceBudgetInReports(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		opt := budget.WithWorkspaceBudget(func(ws string) (int64, bool) { return 1000, ws == "/a" })
		l, _ := newLedger(t, s, "UTC", map[string]config.Limit{"workspace:*": tokens(10000)}, opt)
		reserve(t, l, budget.Request{Workspace: "/a", Tokens: 900})
		reserve(t, l, budget.Request{Workspace: "/b", Tokens: 900})
		k, _, err := l.KeyState(ctx, "workspace:/a")
		if err != nil || k.LimitTokens != 1000 || k.Source != "workspace" || k.RemainingTokens != 100 || k.LimitKey != "" {
			t.Fatalf("/a's state %+v %v: want its own 1000, 100 left", k, err)
		}
		if k, _, _ := l.KeyState(ctx, "workspace:/b"); k.LimitTokens != 10000 || k.RemainingTokens != 9100 {
			t.Fatalf("/b's state %+v: want the workspace:* default", k)
		}
		keys, err := l.Report(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if k.Key == "workspace:/a" && (k.LimitTokens != 1000 || k.RemainingTokens != 100) {
				t.Fatalf("report row %+v: want its own budget", k)
			}
		}
		reserve(t, l, budget.Request{Workspace: "/a", Tokens: 100})
		if k, _, ok, err := l.Exhausted(ctx, "/a", "retro_session"); err != nil || !ok || k.Key != "workspace:/a" {
			t.Fatalf("exhausted /a: %+v %v %v", k, ok, err)
		}
		if _, _, ok, _ := l.Exhausted(ctx, "/b", "retro_session"); ok {
			t.Fatal("/b exhausted by /a's budget")
		}
	})
}
