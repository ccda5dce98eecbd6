package fakeds_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mullhq/mull/llm/fakeds"
)

func TestHTTPFaults(t *testing.T) {
	for _, tc := range []struct {
		fault     fakeds.Fault
		status    int
		errType   string
		retryHead string
	}{
		{fakeds.FaultBadRequest, 400, "invalid_request_error", ""},
		{fakeds.FaultUnauthorized, 401, "authentication_error", ""},
		{fakeds.FaultBalance, 402, "unknown_error", ""},
		{fakeds.FaultInvalidParams, 422, "invalid_request_error", ""},
		{fakeds.FaultRateLimit, 429, "rate_limit_error", "7"},
		{fakeds.FaultServerError, 500, "server_error", ""},
		{fakeds.FaultOverloaded, 503, "server_error", ""},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			rule := fakeds.Rule{Fault: tc.fault}
			if tc.retryHead != "" {
				rule.RetryAfter = 7
			}
			fake, ts := start(t, fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{rule}}})
			resp, body := post(t, ts, "/chat/completions", probeBody("x", nil), nil)
			if resp.StatusCode != tc.status || resp.Header.Get("Retry-After") != tc.retryHead {
				t.Fatalf("status %d Retry-After %q, want %d %q", resp.StatusCode, resp.Header.Get("Retry-After"), tc.status, tc.retryHead)
			}
			if e := decodeError(t, body); e.Error.Type != tc.errType {
				t.Fatalf("error type %q, want %q", e.Error.Type, tc.errType)
			}
			_, err := client(ts, "/v1", "").CreateChatCompletion(t.Context(), probeRequest("x"))
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != tc.status || apiErr.Type != tc.errType || apiErr.Message == "" {
				t.Fatalf("go-openai error %#v, want an APIError with status %d", err, tc.status)
			}
			rec := fake.Requests()[0]
			if rec.Status != tc.status || rec.Fault != tc.fault || rec.Rule != 0 || rec.Usage != nil {
				t.Fatalf("recorded %+v", rec)
			}
		})
	}
}

func TestFaultMessageReplacesTheDefault(t *testing.T) {
	_, ts := start(t, fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{{Fault: fakeds.FaultServerError, Message: "kaboom"}}}})
	_, body := post(t, ts, "/chat/completions", probeBody("x", nil), nil)
	if e := decodeError(t, body); e.Error.Message != "kaboom" {
		t.Fatalf("message %q", e.Error.Message)
	}
}

func TestContentFaults(t *testing.T) {
	for _, tc := range []struct {
		fault  fakeds.Fault
		finish openai.FinishReason
		check  func(content string) bool
	}{
		{fakeds.FaultBlank, openai.FinishReasonStop, func(c string) bool { return c == "" }},
		{fakeds.FaultTruncated, openai.FinishReasonLength, func(c string) bool {
			return c != "" && !json.Valid([]byte(c)) && strings.HasPrefix(`{"echo":"hello hello hello hello","ok":true}`, c)
		}},
		{fakeds.FaultInvalidJSON, openai.FinishReasonStop, func(c string) bool { return c != "" && !json.Valid([]byte(c)) }},
		{fakeds.FaultWrongSchema, openai.FinishReasonStop, func(c string) bool {
			var m map[string]any
			return json.Unmarshal([]byte(c), &m) == nil && m["ok"] == nil && m["echo"] == nil
		}},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				_, ts := start(t, fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{{Fault: tc.fault}}}})
				req := probeRequest("hello hello hello hello")
				var content string
				var finish openai.FinishReason
				if stream {
					req.Stream = true
					content, _, finish, _ = readStream(t, client(ts, "/v1", ""), req)
				} else {
					resp, err := client(ts, "/v1", "").CreateChatCompletion(t.Context(), req)
					if err != nil {
						t.Fatal(err)
					}
					content, finish = resp.Choices[0].Message.Content, resp.Choices[0].FinishReason
				}
				if finish != tc.finish || !tc.check(content) {
					t.Fatalf("stream=%t: content %q finish %q", stream, content, finish)
				}
			}
		})
	}
}

// hangServer serves a fake whose every request hangs, and signals on done
// when the handler has returned.
func hangServer(t *testing.T) (*fakeds.Server, *httptest.Server, chan struct{}) {
	fake := fakeds.New(fakeds.Options{
		KeepAliveEvery: time.Millisecond,
		Script:         &fakeds.Script{Rules: []fakeds.Rule{{Fault: fakeds.FaultHang}}},
	})
	done := make(chan struct{}, 4)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fake.ServeHTTP(w, r)
		done <- struct{}{}
	}))
	t.Cleanup(func() { fake.Close(); ts.Close() })
	return fake, ts, done
}

func TestHangEndsWhenTheClientGoesAway(t *testing.T) {
	for _, stream := range []bool{false, true} {
		fake, ts, done := hangServer(t)
		ctx, cancel := ctxWithCancel(t)
		b, _ := json.Marshal(probeBody("hang", map[string]any{"stream": stream}))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(string(b)))
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		want := "\n"
		if stream {
			want = ": keep-alive\n\n"
		}
		buf := make([]byte, 2*len(want))
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != want+want {
			t.Fatalf("stream=%t: first bytes %q (%v), want two keep-alives", stream, buf, err)
		}
		select {
		case <-done:
			t.Fatal("the handler returned while the client was still there")
		default:
		}
		cancel()
		waitDone(t, done, "handler after the client went away")
		resp.Body.Close()
		if rec := fake.Requests()[0]; rec.Fault != fakeds.FaultHang || rec.Usage != nil {
			t.Fatalf("recorded %+v", rec)
		}
	}
}

func TestHangEndsAtTheClientsDeadline(t *testing.T) {
	_, ts, done := hangServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := client(ts, "/v1", "").CreateChatCompletion(ctx, probeRequest("hang"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the deadline", err)
	}
	waitDone(t, done, "handler after the deadline")
}

func TestCloseReleasesHeldRequests(t *testing.T) {
	fake, ts, done := hangServer(t)
	b, _ := json.Marshal(probeBody("hang", nil))
	resp, err := ts.Client().Post(ts.URL+"/chat/completions", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil || first[0] != '\n' {
		t.Fatalf("first byte %q (%v), want a keep-alive line", first, err)
	}
	fake.Close()
	waitDone(t, done, "handler after Close")
	rest, _ := io.ReadAll(resp.Body)
	if strings.TrimSpace(string(rest)) != "" {
		t.Fatalf("a released hang sent %q, want nothing but keep-alives", rest)
	}
}

func TestSlowAnswersAfterKeepAlives(t *testing.T) {
	fake, ts := start(t, fakeds.Options{
		KeepAliveEvery: time.Millisecond,
		Script:         &fakeds.Script{Rules: []fakeds.Rule{{Fault: fakeds.FaultSlow, Delay: 4 * time.Millisecond}}},
	})
	resp, body := post(t, ts, "/chat/completions", probeBody("later", nil), nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "\n\n\n\n{") {
		t.Fatalf("body %q: want 4 keep-alive lines then JSON", body)
	}
	c := decodeCompletion(t, strings.TrimSpace(body))
	if c.Choices[0].Message.Content != `{"echo":"later","ok":true}` {
		t.Fatalf("content %q", c.Choices[0].Message.Content)
	}
	if rec := fake.Requests()[0]; rec.Fault != fakeds.FaultSlow || rec.Usage == nil {
		t.Fatalf("recorded %+v", rec)
	}
}
