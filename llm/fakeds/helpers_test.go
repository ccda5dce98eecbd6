package fakeds_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/llm/fakeds"
)

// fixedNow is the injected clock of every test server.
var fixedNow = time.Date(2026, 8, 1, 3, 0, 0, 0, time.UTC)

// start serves a fake with fast keep-alives and a fixed clock.
func start(t *testing.T, opts fakeds.Options) (*fakeds.Server, *httptest.Server) {
	t.Helper()
	opts.KeepAliveEvery = cmpOr(opts.KeepAliveEvery, time.Millisecond)
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow }
	}
	fake := fakeds.New(opts)
	ts := httptest.NewServer(fake)
	t.Cleanup(func() { fake.Close(); ts.Close() })
	return fake, ts
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// client is go-openai pointed at the fake; suffix is "/v1" or "".
func client(ts *httptest.Server, suffix, key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = ts.URL + suffix
	cfg.HTTPClient = ts.Client()
	return openai.NewClientWithConfig(cfg)
}

// probeSystem is a system prompt of mull's llm_probe type.
const probeSystem = "mull-prompt: llm_probe\nAnswer in JSON like {\"ok\": true, \"echo\": \"...\"}."

// probeRequest is a JSON-mode llm_probe request as go-openai sends it.
func probeRequest(user string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model: "deepseek-v4-flash",
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: probeSystem},
			{Role: openai.ChatMessageRoleUser, Content: user},
		},
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
	}
}

// probeBody is the same request as a raw JSON body, with extra fields.
func probeBody(user string, extra map[string]any) map[string]any {
	body := map[string]any{
		"model": "deepseek-v4-flash",
		"messages": []map[string]any{
			{"role": "system", "content": probeSystem},
			{"role": "user", "content": user},
		},
		"response_format": map[string]any{"type": "json_object"},
	}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

// post sends a raw request and returns the response and its whole body.
func post(t *testing.T, ts *httptest.Server, path string, body any, header http.Header) (*http.Response, string) {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(out)
}

// wireCompletion is a non-streaming answer as sent on the wire.
type wireCompletion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role             string  `json:"role"`
			Content          string  `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage fakeds.Usage `json:"usage"`
}

func decodeCompletion(t *testing.T, body string) wireCompletion {
	t.Helper()
	var c wireCompletion
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	if len(c.Choices) != 1 {
		t.Fatalf("choices %d in %q, want 1", len(c.Choices), body)
	}
	return c
}

// wireError is an error answer: {"error": {...}} with a null param.
type wireError struct {
	Error struct {
		Message string           `json:"message"`
		Type    string           `json:"type"`
		Param   *json.RawMessage `json:"param"`
		Code    string           `json:"code"`
	} `json:"error"`
}

func decodeError(t *testing.T, body string) wireError {
	t.Helper()
	var e wireError
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" || e.Error.Code == "" {
		t.Fatalf("error body %q: want message, type and code (%v)", body, err)
	}
	if !strings.Contains(body, `"param":null`) {
		t.Fatalf("error body %q: want param null", body)
	}
	return e
}

// checkUsage asserts the cache split adds up.
func checkUsage(t *testing.T, u fakeds.Usage) {
	t.Helper()
	if u.PromptCacheHitTokens+u.PromptCacheMissTokens != u.PromptTokens || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("usage %+v does not add up", u)
	}
}

// waitDone waits for a signal, failing after a generous timeout.
func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-testwait.After(t):
		t.Fatalf("%s: timed out", what)
	}
}

// ctxWithCancel is a request context the test cancels itself.
func ctxWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return ctx, cancel
}

// testServer is a started fake.
type testServer struct {
	fake *fakeds.Server
	ts   *httptest.Server
}

func newTestServer(t *testing.T, opts fakeds.Options) *testServer {
	fake, ts := start(t, opts)
	return &testServer{fake: fake, ts: ts}
}
