package budget

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
)

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		workspace, kind string
		want            []string
	}{
		{"", "", []string{"global"}},
		{"/w", "", []string{"global", "workspace:/w"}},
		{"", "retro", []string{"global", "kind:retro"}},
		{"/w", "retro", []string{"global", "kind:retro", "workspace:/w"}},
	} {
		if got := Keys(tc.workspace, tc.kind); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Keys(%q, %q) = %v, want %v", tc.workspace, tc.kind, got, tc.want)
		}
	}
}

func TestLimitFor(t *testing.T) {
	limits := byKey([]store.BudgetLimit{
		{Key: "global", Tokens: 10}, {Key: "workspace:*", Tokens: 20},
		{Key: "workspace:/own", Tokens: 30}, {Key: "workspace:/free", Tokens: 0},
	})
	for _, tc := range []struct {
		key    string
		from   string
		tokens int64
		ok     bool
	}{
		{"global", "global", 10, true},
		{"workspace:/own", "workspace:/own", 30, true},
		{"workspace:/other", "workspace:*", 20, true},
		{"workspace:/free", "workspace:/free", 0, true}, // its own zero beats the default
		{"kind:retro", "", 0, false},
	} {
		lim, ok := limitFor(tc.key, limits)
		if ok != tc.ok || lim.Key != tc.from || lim.Tokens != tc.tokens {
			t.Errorf("limitFor(%q) = %+v, %v; want %d from %q", tc.key, lim, ok, tc.tokens, tc.from)
		}
	}
	if _, ok := limitFor("workspace:/x", byKey(nil)); ok {
		t.Error("a workspace has a limit with no default")
	}
}

func TestFit(t *testing.T) {
	limits := byKey([]store.BudgetLimit{{Key: "global", Tokens: 1000}, {Key: "kind:k", NanoUSD: 100}})
	usage := func(reserved, spent, nano int64) []store.BudgetUsage {
		return []store.BudgetUsage{
			{Key: "global", BudgetCounters: store.BudgetCounters{ReservedTokens: reserved, SpentTokens: spent}},
			{Key: "kind:k", BudgetCounters: store.BudgetCounters{SpentNanoUSD: nano, SpentTokens: 1 << 40}},
			{Key: "workspace:/w", BudgetCounters: store.BudgetCounters{SpentTokens: 1 << 50}},
		}
	}
	if e := fit(usage(300, 400, 0), limits, 300, 100); e != nil {
		t.Fatalf("exactly at the limits refused: %v", e)
	}
	e := fit(usage(300, 400, 0), limits, 301, 0)
	if e == nil || e.Key != "global" || e.Unit != UnitTokens || e.Limit != 1000 || e.Used != 700 || e.Need != 301 {
		t.Fatalf("over the token limit: %+v", e)
	}
	e = fit(usage(0, 0, 50), limits, 1, 51)
	if e == nil || e.Key != "kind:k" || e.Unit != UnitUSD || e.Limit != 100 || e.Used != 50 || e.Need != 51 {
		t.Fatalf("over the money limit: %+v", e)
	}
	if e := fit(usage(0, 1001, 0), limits, 0, 0); e == nil {
		t.Fatal("a key already over its limit (an overrun) accepted a zero request")
	}
}

func TestExhaustedError(t *testing.T) {
	reset := time.Date(2026, 3, 2, 0, 0, 0, 0, time.FixedZone("CST", 8*3600))
	var err error = &ExhaustedError{Key: "workspace:/w", Day: "2026-03-01", Limit: 1000, Used: 900, Need: 300, Unit: UnitTokens, ResetAt: reset}
	var e *ExhaustedError
	if !errors.As(err, &e) || e.Impossible() {
		t.Fatal("not an ExhaustedError, or impossible")
	}
	want := `budget "workspace:/w" exhausted for 2026-03-01: 900 tokens of 1000 tokens used, 300 tokens more needed; resets at 2026-03-02T00:00:00+08:00`
	if err.Error() != want {
		t.Fatalf("Error() = %q\nwant      %q", err, want)
	}
	usd := &ExhaustedError{Key: "global", Limit: NanoUSD(5), Used: NanoUSD(4.5), Need: NanoUSD(6), Unit: UnitUSD, ResetAt: reset}
	if !strings.Contains(usd.Error(), "$4.5000 of $5.0000 used, $6.0000 more needed") || !usd.Impossible() {
		t.Fatalf("usd error %q, impossible %v", usd, usd.Impossible())
	}
}

func TestDay(t *testing.T) {
	l, err := New(nil, config.Budget{Zone: "Asia/Shanghai"})
	if err != nil {
		t.Fatal(err)
	}
	shanghai, _ := time.LoadLocation("Asia/Shanghai")
	for _, tc := range []struct {
		at    time.Time
		day   string
		reset time.Time
	}{
		{time.Date(2026, 3, 1, 15, 59, 59, 0, time.UTC), "2026-03-01", time.Date(2026, 3, 2, 0, 0, 0, 0, shanghai)},
		{time.Date(2026, 3, 1, 16, 0, 0, 0, time.UTC), "2026-03-02", time.Date(2026, 3, 3, 0, 0, 0, 0, shanghai)},
		{time.Date(2026, 12, 31, 20, 0, 0, 0, time.UTC), "2027-01-01", time.Date(2027, 1, 2, 0, 0, 0, 0, shanghai)},
	} {
		day, reset := l.Day(tc.at)
		if day != tc.day || !reset.Equal(tc.reset) {
			t.Errorf("Day(%s) = %s, %s; want %s, %s", tc.at, day, reset, tc.day, tc.reset)
		}
	}
	day, reset, err := l.ParseDay("2026-02-28")
	if err != nil || day != "2026-02-28" || !reset.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, shanghai)) {
		t.Fatalf("ParseDay = %s, %s, %v", day, reset, err)
	}
	for _, bad := range []string{"2026-2-28", "2026-02-30", "yesterday", "2026-02-28T00:00:00Z"} {
		if _, _, err := l.ParseDay(bad); !errors.Is(err, ErrBadDay) {
			t.Errorf("ParseDay(%q) = %v, want ErrBadDay", bad, err)
		}
	}
	if _, err := New(nil, config.Budget{Zone: "Mars/Olympus"}); err == nil {
		t.Fatal("unknown zone accepted")
	}
	if _, err := New(nil, config.Budget{Limits: map[string]config.Limit{"team:x": {Tokens: 1}}}); err == nil {
		t.Fatal("bad key accepted")
	}
}

func TestDayAcrossDST(t *testing.T) {
	l, err := New(nil, config.Budget{Zone: "America/New_York"})
	if err != nil {
		t.Fatal(err)
	}
	// 2026-03-08 is 23 hours long in New York.
	day, reset := l.Day(time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC))
	if day != "2026-03-08" || !reset.Equal(time.Date(2026, 3, 9, 4, 0, 0, 0, time.UTC)) {
		t.Fatalf("Day = %s, %s; want 2026-03-08 ending 04:00 UTC", day, reset.UTC())
	}
}

func TestBuildReport(t *testing.T) {
	limits := []store.BudgetLimit{
		{Key: "global", Tokens: 1000, NanoUSD: NanoUSD(2), Source: store.BudgetFromOperator},
		{Key: "workspace:*", Tokens: 500, Source: store.BudgetFromConfig},
	}
	usage := []store.BudgetUsage{
		{Key: "global", Day: "d", BudgetCounters: store.BudgetCounters{
			ReservedTokens: 300, SpentTokens: 800, Calls: 4, PromptTokens: 600, CacheHitTokens: 150, SpentNanoUSD: NanoUSD(0.25),
		}},
		{Key: "kind:k", Day: "d", BudgetCounters: store.BudgetCounters{SpentTokens: 5}},
		{Key: "workspace:/w", Day: "d", BudgetCounters: store.BudgetCounters{SpentTokens: 100}},
	}
	got := buildReport("d", limits, usage)
	var keys []string
	for _, r := range got {
		keys = append(keys, r.Key)
	}
	if want := []string{"global", "kind:k", "workspace:*", "workspace:/w"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	g := got[0]
	if g.LimitTokens != 1000 || g.LimitUSD != 2 || g.RemainingTokens != 0 || g.CacheHitShare != 0.25 ||
		g.CostUSD != 0.25 || g.Source != "operator" || g.LimitKey != "" || g.Calls != 4 {
		t.Fatalf("global = %+v", g)
	}
	if k := got[1]; k.RemainingTokens != -1 || k.Source != "" || k.LimitTokens != 0 {
		t.Fatalf("kind:k (no limit) = %+v", k)
	}
	if d := got[2]; d.Day != "d" || d.LimitTokens != 500 || d.RemainingTokens != 500 || d.SpentTokens != 0 {
		t.Fatalf("workspace:* = %+v", d)
	}
	if w := got[3]; w.LimitTokens != 500 || w.LimitKey != "workspace:*" || w.RemainingTokens != 400 || w.Source != "config" {
		t.Fatalf("workspace:/w = %+v", w)
	}
}
