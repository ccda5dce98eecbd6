package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// budgetServer is a server over an insert-only client whose ledger is l.
func budgetServer(t *testing.T, s *store.Store, l *budget.Ledger, token string) *api.Server {
	t.Helper()
	reg := engine.NewRegistry(nil)
	c := enginetest.NewClient(t, s, reg, enginetest.Config(), false)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := api.New(ctx, api.Deps{
		Store: s, Client: c, Registry: reg, Logger: enginetest.Logger(), AdminToken: token, Budget: l,
	})
	if err != nil {
		t.Fatalf("api.New: %v", err)
	}
	return srv
}

func TestBudgetReport(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		// 10:00 on 2026-03-01 in Shanghai.
		s.SetClock(func() time.Time { return time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC) })
		l, err := budget.New(s, config.Budget{Zone: "Asia/Shanghai", Limits: map[string]config.Limit{
			"global": {Tokens: 10_000, USD: 2}, "workspace:*": {Tokens: 4000},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.SyncConfig(ctx); err != nil {
			t.Fatal(err)
		}
		r, err := l.Reserve(ctx, budget.Request{Kind: "retro", Workspace: "/w", Tokens: 3000})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Settle(ctx, r, budget.Usage{PromptTokens: 1000, CompletionTokens: 500, CacheHitTokens: 800, CacheMissTokens: 200, NanoUSD: 250_000_000}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Reserve(ctx, budget.Request{Workspace: "/w", Tokens: 700}); err != nil {
			t.Fatal(err)
		}
		srv := budgetServer(t, s, l, "")

		var body budget.DayReport
		rec := serve(srv, "GET", "/v1/admin/budget", "")
		expect(t, rec, http.StatusOK, &body)
		shanghai, _ := time.LoadLocation("Asia/Shanghai")
		if body.Day != "2026-03-01" || body.Zone != "Asia/Shanghai" || !body.ResetAt.Equal(time.Date(2026, 3, 2, 0, 0, 0, 0, shanghai)) {
			t.Fatalf("day %q zone %q reset %s", body.Day, body.Zone, body.ResetAt)
		}
		if !strings.Contains(rec.Body.String(), `"reset_at": "2026-03-02T00:00:00+08:00"`) {
			t.Fatalf("reset_at not in the budget zone:\n%s", rec.Body)
		}
		keys := map[string]budget.KeyReport{}
		for _, k := range body.Keys {
			keys[k.Key] = k
		}
		g, w := keys["global"], keys["workspace:/w"]
		if len(body.Keys) != 4 || g.LimitTokens != 10_000 || g.LimitUSD != 2 || g.SpentTokens != 1500 || g.ReservedTokens != 700 ||
			g.RemainingTokens != 7800 || g.Calls != 1 || g.CacheHitShare != 0.8 || g.CostUSD != 0.25 || g.Source != "config" {
			t.Fatalf("keys %+v", body.Keys)
		}
		if w.LimitTokens != 4000 || w.LimitKey != "workspace:*" || w.RemainingTokens != 1800 || keys["kind:retro"].RemainingTokens != -1 {
			t.Fatalf("workspace:/w %+v, kind:retro %+v", w, keys["kind:retro"])
		}

		body = budget.DayReport{}
		expect(t, serve(srv, "GET", "/v1/admin/budget?day=2026-02-28", ""), http.StatusOK, &body)
		if body.Day != "2026-02-28" || len(body.Keys) != 2 || body.Keys[0].Key != "global" || body.Keys[0].SpentTokens != 0 {
			t.Fatalf("another day: %+v", body)
		}

		expectError(t, serve(srv, "GET", "/v1/admin/budget?day=28.02.2026", ""), http.StatusBadRequest, `day: want YYYY-MM-DD, got "28.02.2026"`)
		expectError(t, serve(srv, "GET", "/v1/admin/budget", "", from("203.0.113.5:1234")), http.StatusForbidden, "loopback")
		guarded := budgetServer(t, s, l, "sesame")
		expectError(t, serve(guarded, "GET", "/v1/admin/budget", ""), http.StatusUnauthorized, "Bearer")
		expect(t, serve(guarded, "GET", "/v1/admin/budget", "", bearer("sesame")), http.StatusOK, nil)
		expectError(t, serve(budgetServer(t, s, nil, ""), "GET", "/v1/admin/budget", ""), http.StatusServiceUnavailable, "not enabled")
	})
}
