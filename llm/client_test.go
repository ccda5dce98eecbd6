package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/jobs/llmprobe"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
)

// recorder is an in-memory llm_calls table: a started call is a running
// row, finished in place, as the store does it.
type recorder struct {
	mu     sync.Mutex
	calls  []store.LLMCall
	starts int
	// failStart makes StartLLMCall fail after it filled in the record.
	failStart bool
}

func (r *recorder) StartLLMCall(_ context.Context, c *store.LLMCall) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts++
	c.ID, c.Outcome = fmt.Sprintf("call_%d", r.starts), store.LLMCallRunning
	if r.failStart {
		return errors.New("database is locked")
	}
	r.calls = append(r.calls, *c)
	return nil
}

func (r *recorder) FinishLLMCall(_ context.Context, c store.LLMCall) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.calls {
		if c.ID != "" && r.calls[i].ID == c.ID {
			r.calls[i] = c
			return nil
		}
	}
	r.calls = append(r.calls, c)
	return nil
}

// rows returns a copy of the table, for reading while a call is in flight.
func (r *recorder) rows() []store.LLMCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func setup(t *testing.T, script *fakeds.Script, edit func(*config.LLM)) (*llm.Client, *fakeds.Server, *recorder) {
	t.Helper()
	fake := fakeds.New(fakeds.Options{Script: script, KeepAliveEvery: 5 * time.Millisecond})
	srv := httptest.NewServer(fake)
	t.Cleanup(func() { fake.Close(); srv.Close() })
	c, rec := newClient(srv.URL, edit)
	return c, fake, rec
}

// newClient builds a client of the fake at url, recording into a recorder.
func newClient(url string, edit func(*config.LLM)) (*llm.Client, *recorder) {
	cfg := config.Default().LLM
	cfg.BaseURL, cfg.APIKey = url+"/v1", "sk-test"
	cfg.CallTimeout = config.Duration(2 * time.Second)
	if edit != nil {
		edit(&cfg)
	}
	rec := &recorder{}
	c := llm.New(llm.Options{Config: cfg, Calls: rec, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return c, rec
}

func probeCall(text string) llm.Call {
	return llm.Call{Kind: "llm_probe", JobID: 42, Workspace: "/w",
		Messages: []llm.Message{llm.System(llmprobe.Prompt), llm.User(text)}}
}

func TestCompleteJSONSendsWhatDeepSeekNeeds(t *testing.T) {
	c, fake, rec := setup(t, nil, nil)
	out, res, err := llm.CompleteJSON[llmprobe.Output](context.Background(), c, probeCall("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if !out.OK || out.Echo != "hello" || res.Usage.PromptTokens == 0 || res.CostNanoUSD == 0 {
		t.Fatalf("out %+v res %+v", out, res)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	var body map[string]any
	_ = json.Unmarshal(r.Body, &body)
	if r.Model != "deepseek-v4-flash" || r.ResponseFormat != "json_object" || r.Thinking != "disabled" ||
		r.UserID != llm.UserID || r.Kind != "llm_probe" || r.MaxTokens != 4000 || body["temperature"] != 0.2 {
		t.Fatalf("request: model %q format %q thinking %q user %q kind %q max %d temperature %v",
			r.Model, r.ResponseFormat, r.Thinking, r.UserID, r.Kind, r.MaxTokens, body["temperature"])
	}
	if len(rec.calls) != 1 || rec.calls[0].Outcome != "ok" || rec.calls[0].JobID != 42 || rec.calls[0].Workspace != "/w" ||
		rec.calls[0].PromptTokens != res.Usage.PromptTokens || rec.calls[0].CostNanoUSD != res.CostNanoUSD {
		t.Fatalf("record %+v", rec.calls)
	}
}

func TestThinkingAndTemperatureZero(t *testing.T) {
	on, zero := true, float32(0)
	c, fake, _ := setup(t, nil, func(l *config.LLM) {
		l.Kinds = map[string]config.Model{
			"think": {Thinking: &on, ReasoningEffort: "high", Model: "deepseek-v4-pro"},
			"cold":  {Temperature: &zero},
		}
	})
	for _, kind := range []string{"think", "cold"} {
		call := probeCall("x")
		call.Kind = kind
		if _, err := c.Complete(context.Background(), call); err != nil {
			t.Fatal(err)
		}
	}
	reqs := fake.Requests()
	if reqs[0].Thinking != "enabled" || reqs[0].ReasoningEffort != "high" || reqs[0].Model != "deepseek-v4-pro" {
		t.Errorf("thinking kind sent thinking %q effort %q model %q", reqs[0].Thinking, reqs[0].ReasoningEffort, reqs[0].Model)
	}
	var body map[string]any
	_ = json.Unmarshal(reqs[1].Body, &body)
	if v, ok := body["temperature"]; !ok || v != 0.0 {
		t.Errorf("temperature 0 not sent: %v", body)
	}
}

func TestFaultClasses(t *testing.T) {
	tests := []struct {
		fault      fakeds.Fault
		class      llm.Class
		reason     string
		retryAfter time.Duration
	}{
		{fakeds.FaultRateLimit, llm.Retryable, "http_429", 3 * time.Second},
		{fakeds.FaultServerError, llm.Retryable, "http_500", 0},
		{fakeds.FaultOverloaded, llm.Retryable, "http_503", 0},
		{fakeds.FaultBalance, llm.Pause, "http_402", 0},
		{fakeds.FaultBadRequest, llm.Permanent, "http_400", 0},
		{fakeds.FaultUnauthorized, llm.Permanent, "http_401", 0},
		{fakeds.FaultInvalidParams, llm.Permanent, "http_422", 0},
		{fakeds.FaultHang, llm.Retryable, "timeout", 0},
		{fakeds.FaultBlank, llm.Retryable, "blank", 0},
		{fakeds.FaultTruncated, llm.Retryable, "truncated", 0},
		{fakeds.FaultInvalidJSON, llm.Retryable, "invalid_json", 0},
		{fakeds.FaultWrongSchema, llm.Invalid, "schema", 0},
	}
	for _, tt := range tests {
		t.Run(string(tt.fault), func(t *testing.T) {
			rule := fakeds.Rule{Kind: "llm_probe", Fault: tt.fault}
			if tt.fault == fakeds.FaultRateLimit {
				rule.RetryAfter = 3
			}
			// Only the hang has to outlast the call timeout; every other
			// fault's answer gets the test's whole patience to arrive.
			timeout := testwait.Patience(t)
			if tt.fault == fakeds.FaultHang {
				timeout = 300 * time.Millisecond
			}
			c, _, rec := setup(t, &fakeds.Script{Rules: []fakeds.Rule{rule}}, func(l *config.LLM) {
				l.CallTimeout = config.Duration(timeout)
			})
			_, _, err := llm.CompleteJSON[llmprobe.Output](context.Background(), c, probeCall("hi"))
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *llm.Error", err)
			}
			if e.Class != tt.class || e.Reason != tt.reason || e.RetryAfter != tt.retryAfter {
				t.Fatalf("got class %s reason %s retry-after %s; want %s %s %s (%v)", e.Class, e.Reason, e.RetryAfter,
					tt.class, tt.reason, tt.retryAfter, err)
			}
			if len(rec.calls) != 1 || rec.calls[0].Outcome != string(tt.class) || rec.calls[0].ErrorReason != tt.reason {
				t.Fatalf("record %+v", rec.calls)
			}
		})
	}
}

func TestSlowKeepAliveThenAnswer(t *testing.T) {
	c, _, _ := setup(t, &fakeds.Script{Rules: []fakeds.Rule{{Kind: "llm_probe", Fault: fakeds.FaultSlow, Delay: 50 * time.Millisecond}}}, nil)
	if _, _, err := llm.CompleteJSON[llmprobe.Output](context.Background(), c, probeCall("hi")); err != nil {
		t.Fatal(err)
	}
}

func TestLaterCallWithSamePrefixHitsTheCache(t *testing.T) {
	c, _, rec := setup(t, nil, nil)
	long := strings.Repeat("the same fixed instructions and schema, byte for byte. ", 40)
	call := func(tail string) llm.Result {
		res, err := c.Complete(context.Background(), llm.Call{Kind: "k", Messages: []llm.Message{
			llm.System("mull-prompt: test\n" + long), llm.User(tail)}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// DeepSeek persists the prefix two calls share when the second reveals
	// it, so the third is the first to hit it (fakeds emulates this).
	first, _, second := call("first variable part"), call("other variable part"), call("second variable part")
	if first.Usage.CacheHitTokens != 0 || second.Usage.CacheHitTokens == 0 {
		t.Fatalf("cache hits: first %d, third %d", first.Usage.CacheHitTokens, second.Usage.CacheHitTokens)
	}
	if second.Usage.CacheHitTokens+second.Usage.CacheMissTokens != second.Usage.PromptTokens {
		t.Fatalf("hit+miss != prompt: %+v", second.Usage)
	}
	if second.CostNanoUSD >= first.CostNanoUSD {
		t.Fatalf("a cached call should cost less: %d then %d", first.CostNanoUSD, second.CostNanoUSD)
	}
	if rec.calls[2].CacheHitTokens != second.Usage.CacheHitTokens {
		t.Fatalf("record lacks the cache split: %+v", rec.calls[1])
	}
}

type fullLedger struct{ impossible bool }

func (l fullLedger) Reserve(context.Context, budget.Request) (budget.Reservation, error) {
	need := int64(10)
	if l.impossible {
		need = 10_000
	}
	return budget.Reservation{}, &budget.ExhaustedError{Key: "global", Limit: 1000, Used: 995, Need: need, Unit: "tokens",
		ResetAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
}
func (fullLedger) Settle(context.Context, budget.Reservation, budget.Usage) error { return nil }
func (fullLedger) Release(context.Context, budget.Reservation) error              { return nil }

func TestBudgetRefusals(t *testing.T) {
	for _, impossible := range []bool{false, true} {
		fake := fakeds.New(fakeds.Options{})
		srv := httptest.NewServer(fake)
		cfg := config.Default().LLM
		cfg.BaseURL, cfg.APIKey = srv.URL, "sk-test"
		rec := &recorder{}
		c := llm.New(llm.Options{Config: cfg, Ledger: fullLedger{impossible}, Calls: rec, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		_, err := c.Complete(context.Background(), probeCall("x"))
		var e *llm.Error
		if !errors.As(err, &e) {
			t.Fatalf("err = %v", err)
		}
		want := llm.Budget
		if impossible {
			want = llm.Permanent
		}
		if e.Class != want || len(fake.Requests()) != 0 || len(rec.calls) != 1 || rec.calls[0].Outcome != string(want) || rec.starts != 0 {
			t.Errorf("impossible=%t: class %s, %d requests sent, records %+v", impossible, e.Class, len(fake.Requests()), rec.calls)
		}
		if !impossible && !e.ResetAt.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("ResetAt = %s", e.ResetAt)
		}
		srv.Close()
	}
}

// TestRecordRunningWhileInFlight holds the request at the fake and checks
// the call is recorded as running before it returns (a worker killed now
// leaves that row), then finished in place with its usage.
func TestRecordRunningWhileInFlight(t *testing.T) {
	fake := fakeds.New(fakeds.Options{})
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		select {
		case <-release:
			fake.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	c, rec := newClient(srv.URL, func(l *config.LLM) { l.CallTimeout = config.Duration(time.Minute) })

	var res llm.Result
	done := make(chan error, 1)
	go func() {
		var err error
		res, err = c.Complete(context.Background(), probeCall("hi"))
		done <- err
	}()
	select {
	case <-arrived:
	case err := <-done:
		t.Fatalf("call returned before it reached the fake: %v", err)
	case <-testwait.After(t):
		t.Fatal("the call never reached the fake")
	}
	held := rec.rows()
	if len(held) != 1 || held[0].ID == "" || held[0].Outcome != store.LLMCallRunning || held[0].JobID != 42 ||
		held[0].Kind != "llm_probe" || held[0].Workspace != "/w" || held[0].Model == "" || held[0].CreatedAt.IsZero() ||
		held[0].PromptTokens != 0 || held[0].CostNanoUSD != 0 {
		t.Fatalf("records while the call is held: %+v; want one running row", held)
	}

	releaseOnce.Do(func() { close(release) })
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-testwait.After(t):
		t.Fatal("the call did not return once released")
	}
	rows := rec.rows()
	if len(rows) != 1 || rows[0].ID != held[0].ID || rows[0].Outcome != "ok" || rows[0].PromptTokens == 0 ||
		rows[0].PromptTokens != res.Usage.PromptTokens || rows[0].CompletionTokens != res.Usage.CompletionTokens ||
		rows[0].CostNanoUSD != res.CostNanoUSD || !rows[0].CreatedAt.Equal(held[0].CreatedAt) {
		t.Fatalf("records after the call: %+v; want the running row finished ok with %+v", rows, res.Usage)
	}
}

// TestRecordWhenStartFails checks a failed start write neither stops the
// call nor loses its record: the finish inserts it whole.
func TestRecordWhenStartFails(t *testing.T) {
	c, fake, rec := setup(t, nil, nil)
	rec.failStart = true
	res, err := c.Complete(context.Background(), probeCall("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.Requests()) != 1 || rec.starts != 1 || len(rec.calls) != 1 || rec.calls[0].Outcome != "ok" ||
		rec.calls[0].PromptTokens != res.Usage.PromptTokens || rec.calls[0].Kind != "llm_probe" {
		t.Fatalf("%d requests, %d starts, records %+v; want the call made and recorded ok", len(fake.Requests()), rec.starts, rec.calls)
	}
}

// Without an API key nothing is sent and nothing is recorded: the error is
// a Pause (no_key), so the job's queue pauses and no attempt is used.
func TestNoKeySendsNothing(t *testing.T) {
	c, fake, rec := setup(t, nil, func(c *config.LLM) { c.APIKey = "" })
	_, err := c.Complete(context.Background(), probeCall("hello"))
	var e *llm.Error
	if !errors.As(err, &e) || e.Class != llm.Pause || e.Reason != llm.ReasonNoKey || !strings.Contains(err.Error(), "DEEPSEEK_API_KEY") {
		t.Fatalf("err = %v", err)
	}
	if len(fake.Requests()) != 0 || len(rec.rows()) != 0 {
		t.Fatalf("%d requests, %d records without a key", len(fake.Requests()), len(rec.rows()))
	}
}

// A Retry-After longer than llm.max_retry_after is cut to it, and the
// error carries llm.max_snoozes for JobResult.
func TestRetryAfterCapped(t *testing.T) {
	c, _, _ := setup(t, &fakeds.Script{Rules: []fakeds.Rule{{Fault: fakeds.FaultRateLimit, RetryAfter: 315360000}}},
		func(c *config.LLM) { c.MaxRetryAfter, c.MaxSnoozes = config.Duration(time.Hour), 7 })
	_, err := c.Complete(context.Background(), probeCall("hello"))
	var e *llm.Error
	if !errors.As(err, &e) || e.Class != llm.Retryable || e.RetryAfter != time.Hour || e.MaxSnoozes != 7 {
		t.Fatalf("err = %v (%+v)", err, e)
	}
}
