package fakeds_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/llm/fakeds"
)

func TestParseScript(t *testing.T) {
	s, err := fakeds.ParseScript([]byte(`{"rules": [
		{"kind": "retro_session", "times": 2, "fault": 429, "retry_after": 3},
		{"marker": "FAIL-HERE", "fault": "500", "message": "boom"},
		{"model": "deepseek-v4-pro", "fault": "slow", "delay": "2s"},
		{"fault": "slow", "delay": 1.5},
		{"kind": "llm_probe", "response": {"content": {"ok": true, "echo": "hi"}, "reasoning_content": "hm",
		  "usage": {"prompt_cache_hit_tokens": 64}}},
		{"response": {"content": "plain text", "finish_reason": "length"}}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	hit := 64
	want := []fakeds.Rule{
		{Kind: "retro_session", Times: 2, Fault: fakeds.FaultRateLimit, RetryAfter: 3},
		{Marker: "FAIL-HERE", Fault: fakeds.FaultServerError, Message: "boom"},
		{Model: "deepseek-v4-pro", Fault: fakeds.FaultSlow, Delay: 2 * time.Second},
		{Fault: fakeds.FaultSlow, Delay: 1500 * time.Millisecond},
		{Kind: "llm_probe", Response: &fakeds.Response{Content: `{"ok":true,"echo":"hi"}`, ReasoningContent: "hm",
			Usage: &fakeds.UsageOverride{PromptCacheHitTokens: &hit}}},
		{Response: &fakeds.Response{Content: "plain text", FinishReason: "length"}},
	}
	if !reflect.DeepEqual(s.Rules, want) {
		t.Fatalf("rules\n%+v\nwant\n%+v", s.Rules, want)
	}
}

func TestParseScriptErrorsNameRuleAndField(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{`{"rules": [{"fault": "500"}, {"fault": "418"}]}`, `rules[1].fault: unknown fault "418" (want one of 429, 500`},
		{`{"rules": [{"fault": "500", "times": "two"}]}`, `rules[0].times: want a number, got string`},
		{`{"rules": [{"fault": "500"}, {}, {"fualt": "500"}]}`, `rules[1]: give a response or a fault`},
		{`{"rules": [{"fualt": "500"}]}`, `rules[0].fualt: unknown field (known: model, marker`},
		{`{"rules": [{"fault": "500", "response": {"content": "x"}}]}`, `rules[0]: give a response or a fault, not both`},
		{`{"rules": [{"fault": "500", "retry_after": 3}]}`, `rules[0].retry_after: only a 429 fault`},
		{`{"rules": [{"fault": "slow", "delay": "soon"}]}`, `rules[0].delay: "soon" is not a duration`},
		{`{"rules": [{"fault": "hang", "delay": "1s"}]}`, `rules[0].delay: only a slow fault`},
		{`{"rules": [{"fault": "blank", "message": "x"}]}`, `rules[0].message: only an HTTP fault`},
		{`{"rules": [{"fault": "500", "times": -1}]}`, `rules[0].times: -1 is negative`},
		{`{"rules": [{"fault": true}]}`, `rules[0].fault: want a string such as "429"`},
		{`{"rules": [{"response": {"finish_reason": "done"}}]}`, `rules[0].response.finish_reason: unknown finish_reason "done"`},
		{`{"rules": [{"response": {"text": "x"}}]}`, `rules[0].response.text: unknown field (known: content`},
		{`{"rules": [{"response": {"usage": {"prompt_tokens": "9"}}}]}`, `rules[0].response.usage.prompt_tokens: want a number, got string`},
		{`{"rules": ["500"]}`, `rules[0]: want an object, got string`},
		{`{"rules": {}}`, `rules: want a list, got object`},
		{`{"rule": []}`, `rule: unknown field (known: rules)`},
		{`{}`, `rules: missing`},
		{"{\"rules\": [\n{\"fault\": \"500\",}\n]}", `invalid JSON at line 2`},
		{``, `empty`},
	} {
		_, err := fakeds.ParseScript([]byte(tc.script))
		var se *fakeds.ScriptError
		if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("ParseScript(%s):\n got %v\nwant prefix %s", tc.script, err, tc.want)
		}
	}
}

func TestLoadScriptNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(`{"rules": [{"fault": "nope"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := fakeds.LoadScript(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+": rules[0].fault: ") {
		t.Fatalf("err %v", err)
	}
	if _, err := fakeds.LoadScript(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("a missing file loaded")
	}
}

func TestSetScriptRejectsInvalidAndKeepsTheOld(t *testing.T) {
	fake, ts := start(t, fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{{Fault: fakeds.FaultOverloaded}}}})
	err := fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{{Fault: "teapot"}}})
	if err == nil || !strings.Contains(err.Error(), "rules[0].fault") {
		t.Fatalf("err %v", err)
	}
	if resp, _ := post(t, ts, "/chat/completions", probeBody("x", nil), nil); resp.StatusCode != 503 {
		t.Fatalf("status %d, want the old script's 503", resp.StatusCode)
	}
	if err := fake.SetScript(nil); err != nil {
		t.Fatal(err)
	}
	if resp, _ := post(t, ts, "/chat/completions", probeBody("x", nil), nil); resp.StatusCode != 200 {
		t.Fatalf("status %d, want the default responder", resp.StatusCode)
	}
}

func TestNewPanicsOnAnInvalidScript(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "rules[0]") {
			t.Fatalf("recovered %v", r)
		}
	}()
	fakeds.New(fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{{}}}})
}

func TestTimesFailsThenSucceeds(t *testing.T) {
	fake, ts := start(t, fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{
		{Kind: "retro_session", Times: 2, Fault: fakeds.FaultServerError},
	}}})
	kind := http.Header{"X-Mull-Job-Kind": {"retro_session"}}
	statuses := func(n int) []int {
		var out []int
		for range n {
			resp, _ := post(t, ts, "/chat/completions", probeBody("x", nil), kind)
			out = append(out, resp.StatusCode)
		}
		return out
	}
	if got := statuses(3); !reflect.DeepEqual(got, []int{500, 500, 200}) {
		t.Fatalf("statuses %v, want 500 500 200", got)
	}
	fake.Reset()
	if got := statuses(3); !reflect.DeepEqual(got, []int{500, 500, 200}) {
		t.Fatalf("after Reset statuses %v, want 500 500 200 again", got)
	}
	if err := fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{{Times: 1, Fault: fakeds.FaultBalance}}}); err != nil {
		t.Fatal(err)
	}
	if got := statuses(2); !reflect.DeepEqual(got, []int{402, 200}) {
		t.Fatalf("new script statuses %v, want 402 200", got)
	}
}

func TestMatchByModelMarkerAndKind(t *testing.T) {
	fake, ts := start(t, fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{
		{Model: "deepseek-v4-pro", Kind: "reflect_task", Fault: fakeds.FaultBadRequest},
		{Model: "deepseek-v4-pro", Fault: fakeds.FaultOverloaded},
		{Marker: "BOOM", Fault: fakeds.FaultServerError},
		{Kind: "consolidate", Fault: fakeds.FaultBalance},
		{Kind: "llm_probe", Response: &fakeds.Response{Content: `{"ok":true,"echo":"scripted"}`}},
	}}})
	for _, tc := range []struct {
		name   string
		body   map[string]any
		header http.Header
		status int
		rule   int
	}{
		{"model and kind", probeBody("x", map[string]any{"model": "deepseek-v4-pro", "user_id": "mull:reflect_task:3"}), nil, 400, 0},
		{"model", probeBody("x", map[string]any{"model": "deepseek-v4-pro"}), nil, 503, 1},
		{"marker", probeBody("please BOOM now", nil), nil, 500, 2},
		{"kind header", probeBody("x", nil), http.Header{"X-Mull-Job-Kind": {"consolidate"}}, 402, 3},
		{"kind user_id", probeBody("x", map[string]any{"user_id": "mull:consolidate:17"}), nil, 402, 3},
		{"response", probeBody("x", map[string]any{"user_id": "mull:llm_probe:1"}), nil, 200, 4},
		{"no rule", probeBody("x", map[string]any{"user_id": "someone"}), nil, 200, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake.Reset()
			resp, body := post(t, ts, "/chat/completions", tc.body, tc.header)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if rec := fake.Requests()[0]; rec.Rule != tc.rule {
				t.Fatalf("rule %d, want %d", rec.Rule, tc.rule)
			}
			if tc.rule == 4 && decodeCompletion(t, body).Choices[0].Message.Content != `{"ok":true,"echo":"scripted"}` {
				t.Fatalf("body %s: want the scripted content", body)
			}
		})
	}
}

func TestScriptedResponse(t *testing.T) {
	prompt := 99
	_, ts := start(t, fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{{Response: &fakeds.Response{
		FinishReason: "length", ReasoningContent: "because", Usage: &fakeds.UsageOverride{PromptTokens: &prompt},
	}}}}})
	_, body := post(t, ts, "/chat/completions", probeBody("keep the default content", nil), nil)
	c := decodeCompletion(t, body)
	ch := c.Choices[0]
	if ch.Message.Content != `{"echo":"keep the default content","ok":true}` || ch.FinishReason != "length" ||
		ch.Message.ReasoningContent == nil || *ch.Message.ReasoningContent != "because" {
		t.Fatalf("choice %+v", ch)
	}
	if c.Usage.PromptTokens != 99 || c.Usage.TotalTokens != 99+c.Usage.CompletionTokens {
		t.Fatalf("usage %+v: want prompt_tokens overridden and the total recomputed", c.Usage)
	}
}
