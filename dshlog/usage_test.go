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
				if !strings.HasPrefix(e.ID, "dsh:"+f.session+":") || !strings.HasSuffix(e.ID, ":usage") || p.Step < 1 {
					t.Errorf("usage id %q for step %d", e.ID, p.Step)
				}
			}
			if i == 0 { // the plugin's test (integrations/dsh/test/usage.test.mjs) pins the same id and payload
				got := ""
				for _, e := range evs {
					if e.ID == events.DSHID(f.session, 80, "usage") {
						got = string(e.Payload)
					}
				}
				if got != `{"model":"deepseek-v4-flash","provider":"deepseek-official","input_tokens":537,"cache_read_tokens":8576,`+
					`"output_tokens":72,"reasoning_tokens":37,"turn":1,"step":2}` {
					t.Errorf("step 2's usage (seq 80): %q", got)
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
		chunk   = `{"type":"assistant/chunk","seq":1,"time":1795977438821,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":10,"outputTokens":5,"cacheReadTokens":64}}}}`
		message = `{"type":"assistant/message","seq":3,"time":1795977438822,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"source":{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"}},"usage":{"inputTokens":10,"outputTokens":5,"cacheReadTokens":64}}}`
	)
	t.Run("the message copy gives the one event, the chunk nothing", func(t *testing.T) {
		evs := mapRows(t, chunk, message)
		u := ofType(evs, events.Usage)
		if len(u) != 1 || u[0].ID != "dsh:session-u:3:usage" || len(ofType(evs, events.AssistantMessage)) != 1 {
			t.Fatalf("events %v", evs)
		}
		p := payload[events.UsagePayload](t, u[0])
		if p.Model != "deepseek-v4-flash" || p.Provider != "deepseek-official" || p.InputTokens != 10 || p.CacheReadTokens != 64 ||
			p.OutputTokens != 5 || p.ReasoningTokens != nil || p.Turn != 1 || p.Step != 1 {
			t.Errorf("payload %+v", p)
		}
	})
	t.Run("a tool-call-only message still gives its usage", func(t *testing.T) {
		calls := strings.Replace(message, `{"type":"text","text":"ok"}`, `{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"}`, 1)
		evs := mapRows(t, calls)
		if len(evs) != 2 || evs[1].Type != events.Usage {
			t.Fatalf("events %v", evs)
		}
	})
	t.Run("counts mull would refuse are zeroed", func(t *testing.T) {
		bad := strings.Replace(message, `{"inputTokens":10,"outputTokens":5,"cacheReadTokens":64}`,
			`{"inputTokens":-4,"outputTokens":5,"cacheReadTokens":2199023255552,"reasoningTokens":9}`, 1)
		bad = strings.Replace(bad, `"model":"deepseek-v4-flash"`, `"model":"deepseek\nv4"`, 1)
		u := ofType(mapRows(t, bad), events.Usage)
		if p := payload[events.UsagePayload](t, u[0]); p.InputTokens != 0 || p.CacheReadTokens != 0 || *p.ReasoningTokens != 5 || p.Model != "" {
			t.Errorf("payload %+v", p)
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
