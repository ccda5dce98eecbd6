package dshlog_test

import (
	"strings"
	"testing"

	"github.com/mullhq/mull/dshlog"
	"github.com/mullhq/mull/events"
)

// TestMapUsageFixtures: every step's usage once, with the route, and the
// fixture tables' numbers (FORMAT.md §4): S1's five steps sum to 10,027
// uncached and 36,736 cache-hit prompt tokens.
func TestMapUsageFixtures(t *testing.T) {
	want := []struct{ steps, input, cacheRead, output int64 }{
		{5, 8634 + 537 + 377 + 269 + 210, 0 + 8576 + 9088 + 9408 + 9664, 68 + 72 + 120 + 38 + 94},
		{4, 246 + 171 + 172 + 365, 8384 + 8576 + 8704 + 8832, 29 + 45 + 35 + 80},
		{2, 245 + 279, 8384 + 8576, 36 + 23},
		{6, 269 + 332 + 242 + 253 + 212 + 155, 8384 + 8640 + 8960 + 9152 + 9344 + 9536, 61 + 39 + 110 + 37 + 33 + 75},
	}
	for i, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			evs, _, err := dshlog.ReadFile(f.path(t))
			if err != nil {
				t.Fatal(err)
			}
			var steps, input, cacheRead, output int64
			for _, e := range evs {
				if e.Type != events.Usage {
					continue
				}
				p := payload[events.UsagePayload](t, e)
				steps++
				input, cacheRead, output = input+p.InputTokens, cacheRead+p.CacheReadTokens, output+p.OutputTokens
				if p.Model != "deepseek-v4-flash" || p.Provider != "deepseek-official" || p.Turn != 1 || p.ReasoningTokens == nil {
					t.Errorf("%s: %+v", e.ID, p)
				}
				if e.ID != dshlog.UsageID(f.session, p.Turn, p.Step) {
					t.Errorf("usage id %q for step %d", e.ID, p.Step)
				}
			}
			if w := want[i]; steps != w.steps || input != w.input || cacheRead != w.cacheRead || output != w.output {
				t.Errorf("usage: %d steps, %d input, %d cache read, %d output; want %+v", steps, input, cacheRead, output, w)
			}
		})
	}
}

const usageHeader = `{"type":"session","version":0,"id":"session-u","createdAt":1795977438816,"cwd":"/home/dev/app","delegationDepth":0}`

func mapRows(t *testing.T, rows ...string) []events.Event {
	t.Helper()
	lines := [][]byte{[]byte(usageHeader)}
	for _, r := range rows {
		lines = append(lines, []byte(r))
	}
	evs := mapAll(t, dshlog.NewMapper(dshlog.State{}), lines)
	requireValid(t, evs)
	return evs
}

func ofType(evs []events.Event, typ events.Type) []events.Event {
	var out []events.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func TestMapUsageRows(t *testing.T) {
	const (
		ctx     = `{"type":"request/context","seq":0,"time":1795977438820,"data":{"provider":"deepseek-official","model":"deepseek-v4-pro","contextWindow":1000000}}`
		chunk   = `{"type":"assistant/chunk","seq":1,"time":1795977438821,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":10,"outputTokens":5,"cacheReadTokens":64}}}}`
		message = `{"type":"assistant/message","seq":3,"time":1795977438822,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"source":{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"}},"usage":{"inputTokens":10,"outputTokens":5,"cacheReadTokens":64}}}`
	)
	t.Run("chunk and message give one event", func(t *testing.T) {
		u := ofType(mapRows(t, ctx, chunk, message), events.Usage)
		if len(u) != 1 || u[0].ID != "dsh:session-u:usage:1.1" {
			t.Fatalf("usage events %v", u)
		}
		if p := payload[events.UsagePayload](t, u[0]); p.Model != "deepseek-v4-pro" || p.InputTokens != 10 || p.CacheReadTokens != 64 || p.OutputTokens != 5 || p.ReasoningTokens != nil {
			t.Errorf("payload %+v", p)
		}
	})
	t.Run("message alone", func(t *testing.T) {
		evs := mapRows(t, message)
		u := ofType(evs, events.Usage)
		if len(u) != 1 || u[0].ID != "dsh:session-u:usage:1.1" || len(ofType(evs, events.AssistantMessage)) != 1 {
			t.Fatalf("events %v", evs)
		}
		if p := payload[events.UsagePayload](t, u[0]); p.Model != "deepseek-v4-flash" {
			t.Errorf("payload %+v", p)
		}
	})
	t.Run("chunk alone, and a later step", func(t *testing.T) {
		step2 := strings.Replace(strings.Replace(chunk, `"step":1`, `"step":2`, 1), `"seq":1`, `"seq":7`, 1)
		u := ofType(mapRows(t, chunk, step2), events.Usage)
		if len(u) != 2 || u[1].ID != "dsh:session-u:usage:1.2" {
			t.Fatalf("usage events %v", u)
		}
		if p := payload[events.UsagePayload](t, u[0]); p.Model != "" {
			t.Errorf("a route no row named: %+v", p)
		}
	})
	t.Run("counts mull would refuse are zeroed", func(t *testing.T) {
		bad := `{"type":"assistant/chunk","seq":1,"time":1795977438821,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":-4,"outputTokens":5,"cacheReadTokens":2199023255552,"reasoningTokens":9}}}}`
		u := ofType(mapRows(t, bad), events.Usage)
		if p := payload[events.UsagePayload](t, u[0]); p.InputTokens != 0 || p.CacheReadTokens != 0 || *p.ReasoningTokens != 5 {
			t.Errorf("payload %+v", p)
		}
	})
	t.Run("other chunks give nothing", func(t *testing.T) {
		finish := `{"type":"assistant/chunk","seq":1,"time":1795977438821,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}`
		if evs := mapRows(t, finish); len(evs) != 1 {
			t.Fatalf("events %v", evs)
		}
	})
}

func TestMapTitleAndProviderError(t *testing.T) {
	evs := mapRows(t,
		`{"type":"session/title","seq":1,"time":1795977438821,"data":{"title":"  Fix the build  ","messageSeqs":[0],"source":{"kind":"fallback"}}}`,
		`{"type":"session/title","seq":2,"time":1795977438822,"data":{"title":"","source":{"kind":"provider"}}}`,
		`{"type":"turn/end","seq":3,"time":1795977438823,"data":{"turn":1,"reason":{"kind":"error","error":{"message":"Internal server error","code":"SERVER","status":500,"requestId":"579750bd"}}}}`,
		`{"type":"turn/end","seq":4,"time":1795977438824,"data":{"turn":2,"reason":{"kind":"error","error":{"message":"odd","code":"SERVER","status":7,"requestId":"a\nb"}}}}`,
	)
	titles := ofType(evs, events.SessionTitle)
	if len(titles) != 1 || titles[0].ID != events.DSHID("session-u", 1, "") {
		t.Fatalf("titles %v", titles)
	}
	if p := payload[events.SessionTitlePayload](t, titles[0]); p.Title != "Fix the build" || p.Source != "fallback" {
		t.Errorf("title %+v", p)
	}
	errs := ofType(evs, events.Error)
	if len(errs) != 2 {
		t.Fatalf("errors %v", errs)
	}
	if p := payload[events.ErrorPayload](t, errs[0]); p.Status != 500 || p.RequestID != "579750bd" || p.Code != "SERVER" {
		t.Errorf("error %+v", p)
	}
	if p := payload[events.ErrorPayload](t, errs[1]); p.Status != 0 || p.RequestID != "" {
		t.Errorf("a status and request id mull would refuse are kept: %+v", p)
	}
}
