package budget_test

import (
	"context"
	"testing"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestDefaultWorkspaceBudgetIs400k pins the seed's daily budget
// (dailyTokenBudget: 400,000 tokens per workspace) as the default config
// applies it: a workspace fits exactly 400,000 tokens in a day and not one
// more, and another workspace has its own 400,000.
func TestDefaultWorkspaceBudgetIs400k(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		c := &clock{t: t0}
		s.SetClock(c.Now)
		l, err := budget.New(s, config.Config{}.WithDefaults().Budget)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.SyncConfig(context.Background()); err != nil {
			t.Fatal(err)
		}
		reserve(t, l, budget.Request{Workspace: "/a", Kind: "retro_session", Tokens: 399_999})
		if e := refuse(t, l, budget.Request{Workspace: "/a", Kind: "retro_session", Tokens: 2}); e.Key != "workspace:/a" || e.Limit != 400_000 {
			t.Fatalf("refusal %+v, want workspace:/a at 400000", e)
		}
		reserve(t, l, budget.Request{Workspace: "/a", Kind: "retro_session", Tokens: 1})
		reserve(t, l, budget.Request{Workspace: "/b", Kind: "retro_session", Tokens: 400_000})
		if e := refuse(t, l, budget.Request{Workspace: "/b", Kind: "retro_session", Tokens: 1}); e.Key != "workspace:/b" {
			t.Fatalf("refusal %+v, want workspace:/b", e)
		}
	})
}
