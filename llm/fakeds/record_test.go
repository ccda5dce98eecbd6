package fakeds_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mullhq/mull/llm/fakeds"
)

// mull's client adds thinking and user_id to the body in its HTTP layer;
// the record must show them.
func TestRecordsBodyFieldsGoOpenAICannotSend(t *testing.T) {
	fake, ts := start(t, fakeds.Options{})
	body := probeBody("record me", map[string]any{
		"thinking": map[string]any{"type": "enabled"}, "reasoning_effort": "high",
		"user_id": "mull:llm_probe:42", "max_tokens": 500,
	})
	resp, out := post(t, ts, "/v1/chat/completions", body, http.Header{"X-Mull-Job-Kind": {"llm_probe"}, "Authorization": {"Bearer sk-x"}})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	c := decodeCompletion(t, out)
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d records", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-x" ||
		r.Model != "deepseek-v4-flash" || r.Thinking != "enabled" || r.ReasoningEffort != "high" ||
		r.UserID != "mull:llm_probe:42" || r.Kind != "llm_probe" || r.MaxTokens != 500 || r.Stream ||
		r.ResponseFormat != "json_object" || r.Status != 200 || r.Rule != -1 || !r.Time.Equal(fixedNow) || r.ID != c.ID {
		t.Fatalf("record %+v", r)
	}
	want := []fakeds.Message{{Role: "system", Content: probeSystem}, {Role: "user", Content: "record me"}}
	if len(r.Messages) != 2 || r.Messages[0] != want[0] || r.Messages[1] != want[1] {
		t.Fatalf("messages %+v", r.Messages)
	}
	var raw map[string]any
	if err := json.Unmarshal(r.Body, &raw); err != nil || raw["user_id"] != "mull:llm_probe:42" {
		t.Fatalf("raw body %s (%v)", r.Body, err)
	}
	if !reflect.DeepEqual(*r.Usage, c.Usage) {
		t.Fatalf("recorded usage %+v, sent %+v", *r.Usage, c.Usage)
	}
	// Thinking on: reasoning comes back beside the content, and counts.
	if c.Choices[0].Message.ReasoningContent == nil || c.Usage.CompletionTokensDetails == nil ||
		c.Usage.CompletionTokensDetails.ReasoningTokens == 0 {
		t.Fatalf("thinking on: %s", out)
	}
	// Requests returns copies.
	reqs[0].Messages[0].Content = "changed"
	reqs[0].Usage.PromptTokens = -1
	if again := fake.Requests()[0]; again.Messages[0].Content != probeSystem || again.Usage.PromptTokens < 0 {
		t.Fatal("Requests shares memory with the server")
	}
}

func TestWireFormat(t *testing.T) {
	_, ts := start(t, fakeds.Options{})
	resp, out := post(t, ts, "/chat/completions", probeBody("wire", map[string]any{"thinking": map[string]any{"type": "disabled"}}), nil)
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	usage := m["usage"].(map[string]any)
	for _, k := range []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_cache_hit_tokens", "prompt_cache_miss_tokens"} {
		if _, ok := usage[k].(float64); !ok {
			t.Fatalf("usage lacks top-level %s: %s", k, out)
		}
	}
	if m["object"] != "chat.completion" || m["id"] == "" || m["created"] != float64(fixedNow.Unix()) {
		t.Fatalf("head: %s", out)
	}
	if strings.Contains(out, "reasoning_content") || strings.Contains(out, "prompt_tokens_details") {
		t.Fatalf("thinking off or cache split in OpenAI's place: %s", out)
	}

	resp, out = post(t, ts, "/chat/completions", probeBody("wire", map[string]any{"stream": true}), nil)
	events := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n")
	if resp.Header.Get("Content-Type") != "text/event-stream" || events[len(events)-1] != "data: [DONE]" {
		t.Fatalf("stream %q", out)
	}
	var last struct {
		Object  string `json:"object"`
		Choices []struct {
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *fakeds.Usage `json:"usage"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(events[len(events)-2], "data: ")), &last); err != nil ||
		last.Object != "chat.completion.chunk" || last.Usage == nil || *last.Choices[0].FinishReason != "stop" {
		t.Fatalf("last chunk %q (%v)", events[len(events)-2], err)
	}
	checkUsage(t, *last.Usage)
}

func TestAuth(t *testing.T) {
	fake, ts := start(t, fakeds.Options{APIKey: "sk-good-1234"})
	_, err := client(ts, "/v1", "sk-bad-9876").CreateChatCompletion(t.Context(), probeRequest("x"))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 401 || apiErr.Type != "authentication_error" ||
		!strings.Contains(apiErr.Message, "****9876") {
		t.Fatalf("wrong key: %v", err)
	}
	resp, body := post(t, ts, "/chat/completions", probeBody("x", nil), nil)
	if resp.StatusCode != 401 {
		t.Fatalf("no key: status %d", resp.StatusCode)
	}
	decodeError(t, body)
	if _, err := client(ts, "/v1", "sk-good-1234").CreateChatCompletion(t.Context(), probeRequest("x")); err != nil {
		t.Fatalf("right key: %v", err)
	}
	if got := fake.Requests(); len(got) != 3 || got[0].Status != 401 || got[2].Status != 200 {
		t.Fatalf("records %+v", got)
	}
}

func TestRequestValidation(t *testing.T) {
	msgs := []map[string]any{{"role": "user", "content": "hi"}}
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   any
		status int
		msg    string
	}{
		{"not json", "POST", "/chat/completions", `{"model":`, 400, "parse the request body"},
		{"wrong type", "POST", "/chat/completions", `{"model": 3, "messages": []}`, 422, "deserialize"},
		{"no model", "POST", "/chat/completions", map[string]any{"messages": msgs}, 422, "model"},
		{"no messages", "POST", "/chat/completions", map[string]any{"model": "m"}, 422, "messages"},
		{"empty messages", "POST", "/chat/completions", map[string]any{"model": "m", "messages": []any{}}, 400, "Empty input messages"},
		{"bad role", "POST", "/chat/completions", map[string]any{"model": "m", "messages": []map[string]any{{"role": "robot", "content": "x"}}}, 422, "messages[0].role"},
		{"bad content", "POST", "/chat/completions", map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": 5}}}, 422, "messages[0].content"},
		{"bad format", "POST", "/chat/completions", map[string]any{"model": "m", "messages": msgs, "response_format": map[string]any{"type": "xml"}}, 422, "response_format"},
		{"bad thinking", "POST", "/chat/completions", map[string]any{"model": "m", "messages": msgs, "thinking": map[string]any{"type": "maybe"}}, 422, "thinking"},
		{"json mode without json", "POST", "/chat/completions", map[string]any{"model": "m", "messages": msgs, "response_format": map[string]any{"type": "json_object"}}, 400, "word 'json'"},
		{"unknown model", "POST", "/chat/completions", map[string]any{"model": "deepseek-chat", "messages": msgs}, 400, "Model Not Exist"},
		{"get", "GET", "/v1/chat/completions", nil, 405, ""},
		{"unknown path", "POST", "/v1/embeddings", map[string]any{}, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := start(t, fakeds.Options{Models: []string{"m", "deepseek-v4-flash"}})
			var resp *http.Response
			var body string
			if tc.method == "POST" {
				resp, body = post(t, ts, tc.path, tc.body, nil)
			} else {
				r, err := ts.Client().Get(ts.URL + tc.path)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Body.Close()
				b, _ := io.ReadAll(r.Body)
				resp, body = r, string(b)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if e := decodeError(t, body); !strings.Contains(e.Error.Message, tc.msg) {
				t.Fatalf("message %q, want %q", e.Error.Message, tc.msg)
			}
		})
	}
}

func TestDefaultResponder(t *testing.T) {
	_, ts := start(t, fakeds.Options{Responders: map[string]fakeds.Responder{
		"retro_session": func(p fakeds.Prompt) any { return map[string]any{"facts": []string{p.User}} },
	}})
	send := func(system, user string, jsonMode bool, extra map[string]any) string {
		body := map[string]any{
			"model":    "deepseek-v4-flash",
			"messages": []map[string]any{{"role": "system", "content": system}, {"role": "user", "content": user}},
			"thinking": map[string]any{"type": "disabled"},
		}
		if jsonMode {
			body["response_format"] = map[string]any{"type": "json_object"}
		}
		for k, v := range extra {
			body[k] = v
		}
		_, out := post(t, ts, "/chat/completions", body, nil)
		return decodeCompletion(t, out).Choices[0].Message.Content
	}
	long := strings.Repeat("é", 300)
	if got := send(probeSystem, long, true, nil); got != `{"echo":"`+strings.Repeat("é", 200)+`","ok":true}` {
		t.Fatalf("probe echo of 300 runes: %q", got)
	}
	if got := send("Be brief.\n  mull-prompt: retro_session  \nReturn JSON.", "fact one", true, nil); got != `{"facts":["fact one"]}` {
		t.Fatalf("added responder: %q", got)
	}
	if got := send("mull-prompt: not_yet\nReturn JSON.", "x", true, nil); got != `{"ok":true}` {
		t.Fatalf("unknown type in JSON mode: %q", got)
	}
	if got := send("You are helpful.", "x", false, nil); got == "" || json.Valid([]byte(got)) {
		t.Fatalf("no type, plain mode: %q, want short plain text", got)
	}
	// max_tokens cuts the answer: finish_reason length.
	_, out := post(t, ts, "/chat/completions", probeBody(strings.Repeat("z", 100), map[string]any{
		"max_tokens": 5, "thinking": map[string]any{"type": "disabled"},
	}), nil)
	c := decodeCompletion(t, out)
	if ch := c.Choices[0]; ch.FinishReason != "length" || len(ch.Message.Content) != 20 || c.Usage.CompletionTokens != 5 {
		t.Fatalf("max_tokens 5: %s", out)
	}
}

func TestConcurrentRequests(t *testing.T) {
	fake, ts := start(t, fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{{Times: 5, Fault: fakeds.FaultRateLimit}}}})
	var wg sync.WaitGroup
	statuses := make(chan int, 20)
	for i := range 20 {
		wg.Go(func() {
			resp, _ := post(t, ts, "/chat/completions", probeBody(strings.Repeat("c", i), nil), nil)
			statuses <- resp.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	n429 := 0
	for s := range statuses {
		if s == 429 {
			n429++
		}
	}
	if n429 != 5 || len(fake.Requests()) != 20 {
		t.Fatalf("%d rate-limited of %d, want 5 of 20", n429, len(fake.Requests()))
	}
}

func TestContentPartsAndNullContent(t *testing.T) {
	fake, ts := start(t, fakeds.Options{})
	body := map[string]any{
		"model": "deepseek-v4-flash",
		"messages": []map[string]any{
			{"role": "user", "content": []map[string]any{{"type": "text", "text": "part one, "}, {"type": "text", "text": "part two"}}},
			{"role": "assistant", "content": nil},
			{"role": "user", "content": "go on"},
		},
	}
	if resp, out := post(t, ts, "/chat/completions", body, nil); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	got := fake.Requests()[0].Messages
	if len(got) != 3 || got[0].Content != "part one, part two" || got[1].Content != "" || got[2].Content != "go on" {
		t.Fatalf("messages %+v", got)
	}
}

// max_tokens counts reasoning too: reasoning longer than it leaves no content.
func TestMaxTokensCutsReasoningFirst(t *testing.T) {
	_, ts := start(t, fakeds.Options{})
	_, out := post(t, ts, "/chat/completions", probeBody("x", map[string]any{
		"max_tokens": 2, "thinking": map[string]any{"type": "enabled"},
	}), nil)
	c := decodeCompletion(t, out)
	ch := c.Choices[0]
	if ch.FinishReason != "length" || ch.Message.Content != "" || ch.Message.ReasoningContent == nil ||
		len(*ch.Message.ReasoningContent) != 8 || c.Usage.CompletionTokens != 2 {
		t.Fatalf("max_tokens 2 with thinking: %s", out)
	}
}
