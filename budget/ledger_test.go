package budget_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// t0 is 10:00 in Shanghai, 02:00 UTC, on 2026-03-01.
var t0 = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)

// clock is a settable time for the store, safe across goroutines.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// newLedger builds a ledger on s at t0, with limits in tokens, synced.
func newLedger(t testing.TB, s *store.Store, zone string, limits map[string]config.Limit, opts ...budget.Option) (*budget.Ledger, *clock) {
	t.Helper()
	c := &clock{t: t0}
	s.SetClock(c.Now)
	l, err := budget.New(s, config.Budget{Zone: zone, Limits: limits}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SyncConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l, c
}

func tokens(n int64) config.Limit { return config.Limit{Tokens: n} }

func reserve(t *testing.T, l *budget.Ledger, req budget.Request) budget.Reservation {
	t.Helper()
	r, err := l.Reserve(context.Background(), req)
	if err != nil {
		t.Fatalf("reserve %+v: %v", req, err)
	}
	return r
}

func refuse(t *testing.T, l *budget.Ledger, req budget.Request) *budget.ExhaustedError {
	t.Helper()
	_, err := l.Reserve(context.Background(), req)
	var e *budget.ExhaustedError
	if !errors.As(err, &e) {
		t.Fatalf("reserve %+v: %v, want an ExhaustedError", req, err)
	}
	return e
}

func settle(t *testing.T, l *budget.Ledger, r budget.Reservation, u budget.Usage) {
	t.Helper()
	if err := l.Settle(context.Background(), r, u); err != nil {
		t.Fatalf("settle %s: %v", r.ID, err)
	}
}

func release(t *testing.T, l *budget.Ledger, r budget.Reservation) {
	t.Helper()
	if err := l.Release(context.Background(), r); err != nil {
		t.Fatalf("release %s: %v", r.ID, err)
	}
}

// report returns day's rows by key.
func report(t *testing.T, l *budget.Ledger, day string) map[string]budget.KeyReport {
	t.Helper()
	rows, err := l.Report(context.Background(), day)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]budget.KeyReport{}
	for _, r := range rows {
		m[r.Key] = r
	}
	return m
}

func TestReserveSettleRelease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		l, _ := newLedger(t, s, "", map[string]config.Limit{"global": tokens(10_000)})
		req := budget.Request{JobID: 7, Kind: "retro", Workspace: "/w", Tokens: 1000}
		r := reserve(t, l, req)
		if r.Day != "2026-03-01" || r.Tokens != 1000 || strings.Join(r.Keys, ",") != "global,kind:retro,workspace:/w" || r.ID == "" {
			t.Fatalf("reservation = %+v", r)
		}
		for _, k := range r.Keys {
			if got := report(t, l, "")[k]; got.ReservedTokens != 1000 || got.SpentTokens != 0 {
				t.Fatalf("%s after reserve = %+v", k, got)
			}
		}
		if g := report(t, l, "")["global"]; g.RemainingTokens != 9000 || g.LimitTokens != 10_000 || g.Source != "config" {
			t.Fatalf("global after reserve = %+v", g)
		}

		u := budget.Usage{PromptTokens: 600, CompletionTokens: 200, CacheHitTokens: 450, CacheMissTokens: 150, NanoUSD: 1_500_000}
		settle(t, l, r, u)
		settle(t, l, r, u) // idempotent
		release(t, l, r)   // too late: settled
		for _, k := range r.Keys {
			got := report(t, l, "")[k]
			if got.ReservedTokens != 0 || got.SpentTokens != 800 || got.Calls != 1 || got.PromptTokens != 600 ||
				got.CompletionTokens != 200 || got.CacheHitTokens != 450 || got.CacheHitShare != 0.75 ||
				got.CostUSD != 0.0015 || got.FailedCalls != 0 {
				t.Fatalf("%s after settle = %+v", k, got)
			}
		}

		r2 := reserve(t, l, req)
		release(t, l, r2)
		release(t, l, r2)                                  // idempotent
		settle(t, l, r2, budget.Usage{PromptTokens: 5000}) // too late: released
		if g := report(t, l, "")["global"]; g.ReservedTokens != 0 || g.SpentTokens != 800 || g.Calls != 1 || g.FailedCalls != 1 {
			t.Fatalf("global after release = %+v", g)
		}

		if err := l.Settle(ctx, budget.Reservation{ID: "rsv_unknown"}, u); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("settle unknown: %v, want ErrNotFound", err)
		}
		if err := l.Release(ctx, budget.Reservation{}); err == nil {
			t.Fatal("release of an empty reservation accepted")
		}
		if _, err := l.Reserve(ctx, budget.Request{Tokens: -1}); err == nil {
			t.Fatal("negative reservation accepted")
		}
	})
}

func TestReserveIsAllOrNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		l, _ := newLedger(t, s, "", map[string]config.Limit{"global": tokens(100_000), "kind:retro": tokens(1000)})
		req := budget.Request{Kind: "retro", Workspace: "/w", Tokens: 600}
		reserve(t, l, req)
		e := refuse(t, l, req)
		if e.Key != "kind:retro" || e.Limit != 1000 || e.Used != 600 || e.Need != 600 || e.Unit != "tokens" || e.Day != "2026-03-01" {
			t.Fatalf("refusal = %+v", e)
		}
		rep := report(t, l, "")
		for _, k := range []string{"global", "kind:retro", "workspace:/w"} {
			if rep[k].ReservedTokens != 600 {
				t.Fatalf("%s reserved %d after a refusal, want 600 (the first reservation only)", k, rep[k].ReservedTokens)
			}
		}
		if rep["kind:retro"].Refused != 1 || rep["global"].Refused != 0 {
			t.Fatalf("refusals counted on %+v", rep)
		}
		// Another kind still fits: only the full key refuses.
		reserve(t, l, budget.Request{Kind: "other", Workspace: "/w", Tokens: 600})
	})
}

func TestWorkspaceDefaultAndUnlimitedKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		l, _ := newLedger(t, s, "", map[string]config.Limit{
			"workspace:*": tokens(1000), "workspace:/big": tokens(5000), "workspace:/free": tokens(0),
		})
		reserve(t, l, budget.Request{Workspace: "/a", Tokens: 800})
		if e := refuse(t, l, budget.Request{Workspace: "/a", Tokens: 300}); e.Key != "workspace:/a" || e.Limit != 1000 {
			t.Fatalf("refusal = %+v", e)
		}
		reserve(t, l, budget.Request{Workspace: "/b", Tokens: 800}) // its own 1000
		reserve(t, l, budget.Request{Workspace: "/big", Tokens: 3000})
		reserve(t, l, budget.Request{Workspace: "/free", Tokens: 1 << 40}) // its own zero: no limit
		reserve(t, l, budget.Request{Kind: "k", Tokens: 1 << 40})          // no limit on global or kinds

		rep := report(t, l, "")
		if a := rep["workspace:/a"]; a.LimitTokens != 1000 || a.LimitKey != "workspace:*" || a.RemainingTokens != 200 || a.Refused != 1 {
			t.Fatalf("workspace:/a = %+v", a)
		}
		if d := rep["workspace:*"]; d.LimitTokens != 1000 || d.ReservedTokens != 0 {
			t.Fatalf("workspace:* = %+v", d)
		}
		if g := rep["global"]; g.LimitTokens != 0 || g.RemainingTokens != -1 || g.ReservedTokens != 800+800+3000+2<<40 || g.Source != "" {
			t.Fatalf("global (no limit, tracked) = %+v", g)
		}
		if f := rep["workspace:/free"]; f.LimitKey != "" || f.RemainingTokens != -1 {
			t.Fatalf("workspace:/free = %+v", f)
		}
	})
}

func TestDayRollover(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		shanghai, _ := time.LoadLocation("Asia/Shanghai")
		l, c := newLedger(t, s, "Asia/Shanghai", map[string]config.Limit{"global": tokens(1000)})
		c.Set(time.Date(2026, 3, 1, 15, 30, 0, 0, time.UTC)) // 23:30 in Shanghai
		first := reserve(t, l, budget.Request{Tokens: 800})
		e := refuse(t, l, budget.Request{Tokens: 300})
		midnight := time.Date(2026, 3, 2, 0, 0, 0, 0, shanghai)
		if first.Day != "2026-03-01" || !e.ResetAt.Equal(midnight) || e.Wait != 30*time.Minute {
			t.Fatalf("day %s, reset %s, wait %s; want 2026-03-01, %s, 30m", first.Day, e.ResetAt, e.Wait, midnight)
		}

		c.Set(midnight.UTC()) // 16:00 UTC
		second := reserve(t, l, budget.Request{Tokens: 1000})
		if second.Day != "2026-03-02" {
			t.Fatalf("after midnight the day is %s", second.Day)
		}
		// Settled after midnight, the first call still counts on its own day.
		settle(t, l, first, budget.Usage{PromptTokens: 500, CompletionTokens: 100})
		if g := report(t, l, "2026-03-01")["global"]; g.SpentTokens != 600 || g.ReservedTokens != 0 || g.Day != "2026-03-01" {
			t.Fatalf("2026-03-01 = %+v", g)
		}
		if g := report(t, l, "")["global"]; g.Day != "2026-03-02" || g.ReservedTokens != 1000 || g.SpentTokens != 0 {
			t.Fatalf("today = %+v", g)
		}
		d, err := l.ReportDay(context.Background(), "")
		if err != nil || d.Day != "2026-03-02" || d.Zone != "Asia/Shanghai" || !d.ResetAt.Equal(midnight.AddDate(0, 0, 1)) {
			t.Fatalf("ReportDay = %+v, %v", d, err)
		}
		if _, err := l.Report(context.Background(), "03/01/2026"); !errors.Is(err, budget.ErrBadDay) {
			t.Fatalf("bad day: %v", err)
		}
	})
}

func TestMoneyLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		l, _ := newLedger(t, s, "", map[string]config.Limit{"global": {USD: 0.01}})
		first := reserve(t, l, budget.Request{Tokens: 100, NanoUSD: 6_000_000})
		e := refuse(t, l, budget.Request{Tokens: 100, NanoUSD: 6_000_000})
		if e.Unit != "usd" || e.Limit != 10_000_000 || e.Used != 6_000_000 || e.Need != 6_000_000 || !strings.Contains(e.Error(), "$0.0100") {
			t.Fatalf("refusal = %+v (%v)", e, e)
		}
		settle(t, l, first, budget.Usage{PromptTokens: 50, NanoUSD: 5_000_000})
		reserve(t, l, budget.Request{Tokens: 100, NanoUSD: 5_000_000}) // 5 spent + 5 = the limit
		g := report(t, l, "")["global"]
		if g.LimitUSD != 0.01 || g.CostUSD != 0.005 || g.ReservedUSD != 0.005 || g.LimitTokens != 0 || g.RemainingTokens != -1 {
			t.Fatalf("global = %+v", g)
		}
	})
}

func TestRuntimeLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		cfg := map[string]config.Limit{"global": tokens(1000), "kind:old": tokens(5)}
		server, _ := newLedger(t, s, "", cfg)
		// The operator's CLI is another ledger on the same database.
		cli, err := budget.New(s, config.Budget{Limits: cfg})
		if err != nil {
			t.Fatal(err)
		}
		reserve(t, server, budget.Request{Tokens: 900})
		refuse(t, server, budget.Request{Tokens: 200})

		if err := cli.SetLimit(ctx, "global", 2000, 0); err != nil {
			t.Fatal(err)
		}
		reserve(t, server, budget.Request{Tokens: 200}) // next Reserve, no restart
		if err := server.SyncConfig(ctx); err != nil {  // a restart keeps the operator's limit
			t.Fatal(err)
		}
		if g := report(t, server, "")["global"]; g.LimitTokens != 2000 || g.Source != "operator" {
			t.Fatalf("after SyncConfig: %+v", g)
		}
		if err := cli.SetLimit(ctx, "kind:new", 7, 1.5); err != nil {
			t.Fatal(err)
		}

		if err := cli.UnsetLimit(ctx, "global"); err != nil {
			t.Fatal(err)
		}
		if e := refuse(t, server, budget.Request{Tokens: 1}); e.Limit != 1000 || e.Used != 1100 {
			t.Fatalf("after unset: %+v", e)
		}
		if g := report(t, server, "")["global"]; g.LimitTokens != 1000 || g.Source != "config" {
			t.Fatalf("after unset: %+v", g)
		}

		// A new config drops kind:old; the operator's kind:new stays.
		next, err := budget.New(s, config.Budget{Limits: map[string]config.Limit{"global": tokens(3000)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := next.SyncConfig(ctx); err != nil {
			t.Fatal(err)
		}
		rep := report(t, server, "")
		if _, ok := rep["kind:old"]; ok {
			t.Fatalf("kind:old survived a config without it: %+v", rep["kind:old"])
		}
		if n := rep["kind:new"]; n.LimitTokens != 7 || n.LimitUSD != 1.5 || n.Source != "operator" {
			t.Fatalf("kind:new = %+v", n)
		}
		if err := next.UnsetLimit(ctx, "kind:new"); err != nil {
			t.Fatal(err)
		}
		if _, ok := report(t, server, "")["kind:new"]; ok {
			t.Fatal("kind:new still has a limit after unset")
		}

		for _, bad := range []struct {
			key    string
			tokens int64
			usd    float64
		}{{"team:x", 1, 0}, {"kind:", 1, 0}, {"global", -1, 0}, {"global", 1, -0.5}} {
			if err := cli.SetLimit(ctx, bad.key, bad.tokens, bad.usd); !errors.Is(err, budget.ErrBadLimit) {
				t.Errorf("SetLimit(%q, %d, %g) = %v, want ErrBadLimit", bad.key, bad.tokens, bad.usd, err)
			}
		}
		if err := cli.UnsetLimit(ctx, "nope"); !errors.Is(err, budget.ErrBadLimit) {
			t.Errorf("UnsetLimit(nope) = %v", err)
		}
	})
}

func TestReleaseExpiredAndOverruns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var logs bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, nil))
		l, c := newLedger(t, s, "", map[string]config.Limit{"global": tokens(1000)}, budget.WithLogger(logger))
		dead := reserve(t, l, budget.Request{JobID: 1, Tokens: 400, Expires: t0.Add(time.Minute)})
		alive := reserve(t, l, budget.Request{JobID: 2, Tokens: 500}) // DefaultHold: an hour
		refuse(t, l, budget.Request{Tokens: 200})

		c.Set(t0.Add(2 * time.Minute))
		for i, want := range []int{1, 0} {
			if n, err := l.ReleaseExpired(ctx); err != nil || n != want {
				t.Fatalf("ReleaseExpired #%d = %d, %v; want %d", i+1, n, err, want)
			}
		}
		if g := report(t, l, "")["global"]; g.ReservedTokens != 500 || g.FailedCalls != 0 {
			t.Fatalf("after expiry = %+v", g)
		}
		reserve(t, l, budget.Request{Tokens: 400}) // the dead one's hold is back

		// The "dead" process settles after all: its usage is the truth.
		release(t, l, dead) // no effect: expired already
		settle(t, l, dead, budget.Usage{PromptTokens: 300})
		if g := report(t, l, "")["global"]; g.SpentTokens != 300 || g.ReservedTokens != 900 || g.Calls != 1 {
			t.Fatalf("after a late settle = %+v", g)
		}
		if !strings.Contains(logs.String(), "after_expiry=true") {
			t.Fatalf("late settle not logged:\n%s", logs.String())
		}

		// A call that used more than it reserved is recorded and flagged.
		logs.Reset()
		settle(t, l, alive, budget.Usage{PromptTokens: 500, CompletionTokens: 100})
		if g := report(t, l, "")["global"]; g.SpentTokens != 900 || g.Overruns != 1 || g.ReservedTokens != 400 {
			t.Fatalf("after an overrun = %+v", g)
		}
		if !strings.Contains(logs.String(), "overrun=true") || !strings.Contains(logs.String(), "used_tokens=600") {
			t.Fatalf("overrun not logged:\n%s", logs.String())
		}
	})
}
