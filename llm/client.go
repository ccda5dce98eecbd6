// Package llm calls DeepSeek through go-openai: per-kind model settings,
// absolute deadlines, JSON mode with validation, usage with DeepSeek's
// prefix-cache split, cost, a daily budget reserved before each call and
// settled after, a record of every call (written as running before the
// request goes out, finished when it returns), and errors sorted into
// classes that map to River in one place. The fake DeepSeek for tests and
// demos is llm/fakeds.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/trust"
	"github.com/mullhq/mull/store"
)

// UserID is the user_id mull sends with every call.
const UserID = "mull"

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// System and User build messages.
func System(s string) Message { return Message{Role: "system", Content: s} }
func User(s string) Message   { return Message{Role: "user", Content: s} }

// Call is one request to the model.
type Call struct {
	// Kind is the job kind making the call: it picks the model settings,
	// the budget key and the record.
	Kind string
	// JobID is the River job making the call (0 outside jobs).
	JobID int64
	// Workspace is the DSH workspace the call works for, for its budget.
	Workspace string
	// Messages: the fixed part first and byte-identical across calls, so
	// DeepSeek's prefix cache serves it; the variable part last.
	Messages []Message
	// JSON asks for a JSON object (response_format json_object).
	JSON bool
	// MaxTokens, when > 0, caps this call's completion instead of the
	// kind's llm max_tokens (a kind with its own cap in config, such as
	// harness.planner_max_tokens); the budget reserves it.
	MaxTokens int

	// decode, set by CompleteJSON, checks the output inside the call so
	// that its record carries the final outcome.
	decode func(content string) error
}

// Result is a successful call.
type Result struct {
	Content      string
	Reasoning    string
	FinishReason string
	Model        string
	Usage        Usage
	CostNanoUSD  int64
	Latency      time.Duration
}

// Ledger is the daily budget (budget.Ledger); nil disables budgets.
type Ledger interface {
	Reserve(ctx context.Context, r budget.Request) (budget.Reservation, error)
	Settle(ctx context.Context, r budget.Reservation, u budget.Usage) error
	Release(ctx context.Context, r budget.Reservation) error
}

// Recorder stores call records (the store); nil records nothing. A call is
// started as running before its request goes out, and finished when it
// returns; FinishLLMCall inserts the whole record when the start was never
// written.
type Recorder interface {
	StartLLMCall(ctx context.Context, c *store.LLMCall) error
	FinishLLMCall(ctx context.Context, c store.LLMCall) error
}

// Options build a Client.
type Options struct {
	Config config.LLM
	Ledger Ledger
	Calls  Recorder
	Logger *slog.Logger
	// HTTPClient defaults to one with no timeout of its own: each call has
	// an absolute deadline (Config.CallTimeout) instead, since DeepSeek holds
	// requests open with keep-alive lines while it waits for capacity.
	HTTPClient *http.Client
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Client calls DeepSeek.
type Client struct {
	cfg     config.LLM
	oa      *openai.Client
	hc      *http.Client
	ledger  Ledger
	calls   Recorder
	pricing Pricing
	log     *slog.Logger
	now     func() time.Time
}

// New builds a client.
func New(o Options) *Client {
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	oc := openai.DefaultConfig(o.Config.APIKey)
	oc.BaseURL = strings.TrimSuffix(o.Config.BaseURL, "/")
	oc.HTTPClient = &transport{hc: hc}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Client{
		cfg: o.Config, oa: openai.NewClientWithConfig(oc), hc: hc, ledger: o.Ledger, calls: o.Calls,
		pricing: NewPricing(o.Config), log: o.Logger, now: now,
	}
}

// Pricing is the client's price table.
func (c *Client) Pricing() Pricing { return c.pricing }

// Hold is how long after it starts a call can still be in flight: its
// deadline (llm.call_timeout) plus a minute to settle and record it. Its
// budget reservation expires then, and a record still running after it
// belongs to a worker that died: jobs/budgetsweep marks it lost.
func (c *Client) Hold() time.Duration { return c.cfg.CallTimeout.D() + time.Minute }

// Complete makes one call: reserve budget, record the call as running, call
// with an absolute deadline, read usage, settle, finish the record. A call
// whose output is blank or truncated is an error (Retryable) even though it
// spent tokens, which are settled.
//
// Without an API key nothing is sent: the error is a Pause (ReasonNoKey),
// so the job's queue pauses and the job waits without using an attempt.
func (c *Client) Complete(ctx context.Context, call Call) (Result, error) {
	if c.cfg.APIKey == "" {
		return Result{}, newErr(Pause, ReasonNoKey, errors.New(NoKeyReason+" (or llm.api_key) set; nothing was sent"))
	}
	m := c.cfg.ForKind(call.Kind)
	if call.MaxTokens > 0 {
		m.MaxTokens = call.MaxTokens
	}
	start := c.now()
	rec := store.LLMCall{JobID: call.JobID, Kind: call.Kind, Workspace: call.Workspace, Model: m.Model, CreatedAt: start,
		Messages: c.keptMessages(call.Messages)}
	res, usage, err := c.complete(ctx, call, m, &rec)
	rec.LatencyMS = c.now().Sub(start).Milliseconds()
	rec.PromptTokens, rec.CompletionTokens = usage.PromptTokens, usage.CompletionTokens
	rec.CacheHitTokens, rec.CacheMissTokens = usage.CacheHitTokens, usage.CacheMissTokens
	rec.CostNanoUSD = c.pricing.Cost(m.Model, start, usage)
	rec.Outcome = "ok"
	rec.Response = c.keptResponse(res.Content, res.Reasoning)
	if err != nil {
		var e *Error
		errors.As(err, &e)
		rec.Outcome, rec.ErrorReason, rec.Error = string(e.Class), e.Reason, truncate(err.Error(), 1000)
		if e.RetryAfter > 0 {
			if limit := c.cfg.MaxRetryAfter.D(); limit > 0 && e.RetryAfter > limit {
				e.RetryAfter = limit
			}
			e.MaxSnoozes, e.MaxRetryAfter = c.cfg.MaxSnoozes, c.cfg.MaxRetryAfter.D()
		}
	}
	c.finish(ctx, rec)
	res.Usage, res.CostNanoUSD, res.Latency, res.Model = usage, rec.CostNanoUSD, time.Duration(rec.LatencyMS)*time.Millisecond, m.Model
	return res, err
}

// KeepPrompts is llm.keep_prompts: how long call records keep their
// messages; 0 keeps none.
func (c *Client) KeepPrompts() time.Duration { return c.cfg.KeepPromptsFor() }

// keptMessages is what a call's record keeps of its messages: nothing when
// llm.keep_prompts is 0, else each message through the trust gate's
// redaction. A retro's excerpt quotes tool output and commands as the
// session had them, secrets included (only what mull learns passes the
// gate before it is stored), so the record holds the text the model read
// normalized and with every credential replaced by [redacted:TYPE].
func (c *Client) keptMessages(msgs []Message) []store.LLMMessage {
	if c.cfg.KeepPromptsFor() <= 0 {
		return nil
	}
	out := make([]store.LLMMessage, len(msgs))
	for i, m := range msgs {
		text, _ := trust.Redact(m.Content)
		out[i] = store.LLMMessage{Role: m.Role, Content: text}
	}
	return out
}

// keptResponse is what a call's record keeps of the model's answer: as
// keptMessages keeps the prompt, nothing when llm.keep_prompts is 0, else
// the content and reasoning through the trust gate's redaction; nil when
// no answer came.
func (c *Client) keptResponse(content, reasoning string) *store.LLMResponse {
	if c.cfg.KeepPromptsFor() <= 0 || (content == "" && reasoning == "") {
		return nil
	}
	content, _ = trust.Redact(content)
	reasoning, _ = trust.Redact(reasoning)
	return &store.LLMResponse{Content: content, Reasoning: reasoning}
}

// start records the call as running once its budget is reserved, just
// before the request goes out: a worker killed mid-call leaves that record
// for the budget sweep to mark lost, while a call refused before it reached
// DeepSeek never shows as in flight. A failed write is logged and the call
// goes on; finish then inserts the whole record.
func (c *Client) start(ctx context.Context, rec *store.LLMCall) {
	if c.calls == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.calls.StartLLMCall(sctx, rec); err != nil {
		c.log.Warn("record llm call start", "error", err, "kind", rec.Kind, "job_id", rec.JobID)
	}
}

// finish writes the call's final record over its running one, or inserts it
// when there is none.
func (c *Client) finish(ctx context.Context, rec store.LLMCall) {
	if c.calls == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.calls.FinishLLMCall(rctx, rec); err != nil {
		c.log.Warn("record llm call", "error", err, "kind", rec.Kind, "job_id", rec.JobID)
	}
}

func (c *Client) complete(ctx context.Context, call Call, m config.Model, rec *store.LLMCall) (Result, Usage, error) {
	if len(call.Messages) == 0 {
		return Result{}, Usage{}, newErr(Permanent, "empty_prompt", errors.New("no messages"))
	}
	start := rec.CreatedAt
	promptEst := EstimatePromptTokens(call.Messages)
	resv, err := c.reserve(ctx, call, m, start, promptEst)
	if err != nil {
		return Result{}, Usage{}, err
	}
	c.start(ctx, rec)
	res, usage, spent, err := c.do(ctx, call, m)
	c.settle(ctx, resv, usage, spent, m.Model, start)
	return res, usage, err
}

func (c *Client) reserve(ctx context.Context, call Call, m config.Model, start time.Time, promptEst int64) (*budget.Reservation, error) {
	if c.ledger == nil {
		return nil, nil
	}
	max := int64(m.MaxTokens)
	r, err := c.ledger.Reserve(ctx, budget.Request{
		JobID: call.JobID, Kind: call.Kind, Workspace: call.Workspace,
		Tokens: promptEst + max, NanoUSD: c.pricing.MaxCost(m.Model, start, promptEst, max),
		Expires: start.Add(c.Hold()),
	})
	var ex *budget.ExhaustedError
	if errors.As(err, &ex) && ex.Impossible() {
		// Waiting for the reset cannot help a call bigger than the limit.
		return nil, newErr(Permanent, "budget_too_small", fmt.Errorf("%w; raise the limit or lower max_tokens for %s", err, call.Kind))
	}
	if errors.As(err, &ex) {
		return nil, &Error{Class: Budget, Reason: "budget", ResetAt: ex.ResetAt, Err: err}
	}
	if err != nil {
		return nil, newErr(Retryable, "budget_store", err)
	}
	return &r, nil
}

func (c *Client) settle(ctx context.Context, r *budget.Reservation, u Usage, spent bool, model string, start time.Time) {
	if r == nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var err error
	if spent {
		err = c.ledger.Settle(sctx, *r, budget.Usage{
			PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
			CacheHitTokens: u.CacheHitTokens, CacheMissTokens: u.CacheMissTokens,
			NanoUSD: c.pricing.Cost(model, start, u),
		})
	} else {
		err = c.ledger.Release(sctx, *r)
	}
	if err != nil {
		c.log.Warn("settle budget", "error", err, "reservation", r.ID)
	}
}

// do sends the request. spent says whether the server reported usage, so
// the reservation is settled to it rather than released.
func (c *Client) do(ctx context.Context, call Call, m config.Model) (Result, Usage, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout.D())
	defer cancel()
	req := openai.ChatCompletionRequest{Model: m.Model, MaxTokens: m.MaxTokens}
	for _, msg := range call.Messages {
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: msg.Role, Content: msg.Content})
	}
	if call.JSON {
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	st := &callState{extra: c.extraBody(call, m), header: http.Header{"X-Mull-Job-Kind": {call.Kind}}}
	resp, err := c.oa.CreateChatCompletion(withState(ctx, st), req)
	usage, spent := usageFrom(st.raw)
	if err != nil {
		return Result{}, usage, spent && st.status < 300, classify(ctx, err, st.retryAfter)
	}
	if len(resp.Choices) == 0 {
		return Result{}, usage, spent, newErr(Retryable, "no_choices", errors.New("response has no choices"))
	}
	ch := resp.Choices[0]
	res := Result{Content: ch.Message.Content, Reasoning: ch.Message.ReasoningContent, FinishReason: string(ch.FinishReason)}
	if err := finishError(ch.FinishReason, res.Content, m.MaxTokens); err != nil {
		return res, usage, spent, err
	}
	if call.decode != nil {
		if err := call.decode(res.Content); err != nil {
			return res, usage, spent, err
		}
	}
	return res, usage, spent, nil
}

// extraBody holds the fields go-openai cannot send: thinking, user_id,
// and the temperature (its omitempty drops 0). user_id is one constant:
// DeepSeek keeps a prefix cache per user_id, and every job shares the fixed
// part of its kind's prompt, so a per-job id would turn every call into a
// cache miss. The job is named in the X-Mull-Job-Kind header instead.
func (c *Client) extraBody(call Call, m config.Model) map[string]any {
	extra := map[string]any{"user_id": UserID}
	if m.Thinking != nil && *m.Thinking {
		extra["thinking"] = map[string]string{"type": "enabled"}
		if m.ReasoningEffort != "" {
			extra["reasoning_effort"] = m.ReasoningEffort
		}
	} else {
		extra["thinking"] = map[string]string{"type": "disabled"}
		if m.Temperature != nil {
			extra["temperature"] = *m.Temperature
		}
	}
	return extra
}

// Validator checks a decoded output; an error names the field and what is
// wrong with it.
type Validator interface {
	Validate() error
}

// CompleteJSON makes a JSON-mode call and decodes the output into T, which
// must validate itself. Blank, truncated or unparsable output is Retryable;
// output that parses but fails validation is Invalid.
func CompleteJSON[T Validator](ctx context.Context, c *Client, call Call) (T, Result, error) {
	var out T
	call.JSON = true
	call.decode = func(content string) error {
		var v T
		dec := json.NewDecoder(strings.NewReader(content))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) || strings.Contains(err.Error(), "unknown field") {
				return newErr(Invalid, "schema", fmt.Errorf("output does not fit the schema: %w", err))
			}
			return newErr(Retryable, "invalid_json", fmt.Errorf("output is not JSON: %w (starts %q)", err, truncate(content, 80)))
		}
		if dec.More() {
			return newErr(Retryable, "invalid_json", errors.New("output has data after its JSON object"))
		}
		if err := v.Validate(); err != nil {
			return newErr(Invalid, "schema", fmt.Errorf("output fails validation: %w", err))
		}
		out = v
		return nil
	}
	res, err := c.Complete(ctx, call)
	return out, res, err
}
