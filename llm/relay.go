package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/store"
)

// RelayCall is a chat completion an outside client (a benchmark cell's
// DSH) makes through mull: its body as that client wrote it, charged and
// recorded as a call of Kind by JobID, as Complete charges a job's own.
//
// The body goes out as written, not through go-openai's request types:
// an agent's requests carry what those types drop or reshape (tool calls,
// reasoning_content in its history, DeepSeek's thinking), and the answer
// goes back to the client byte for byte, streamed when it asked.
type RelayCall struct {
	Kind      string
	JobID     int64
	Workspace string
	// Body is the chat completion request.
	Body []byte
	// MaxTokens caps the completion: the request's max_tokens when
	// smaller, else this one, written into the body, so the budget's
	// reservation bounds what the call can spend.
	MaxTokens int
	// Model, when set, is the only model the call may use: the body's is
	// rewritten to it (a benchmark cell's capability names its model, so
	// the cell cannot pick a pricier one).
	Model string
	// Header holds the request headers to forward (the caller picks them;
	// Authorization is always mull's key).
	Header http.Header
}

// Relayed is DeepSeek's answer to a relayed call.
type Relayed struct {
	Status int
	Header http.Header
	// Body is the answer. Reading it through reads the usage; Close
	// settles the budget and finishes the call's record, and must be
	// called.
	Body io.ReadCloser
	// Failure is the sorted error of a non-2xx answer (its record is
	// finished already; Body holds DeepSeek's error).
	Failure *Error
}

// Relay forwards one call: reserve the budget (the prompt's size in bytes
// plus the capped max_tokens), record it as running, send it with mull's
// key under llm.call_timeout, and hand back the answer. The error is set
// only when nothing was sent: no key (Pause), no budget (Budget or
// Permanent budget_too_small), a body that is not a chat request
// (Permanent), or the request failing on its way (Retryable).
func (c *Client) Relay(ctx context.Context, call RelayCall) (*Relayed, error) {
	if c.cfg.APIKey == "" {
		return nil, newErr(Pause, ReasonNoKey, errors.New(NoKeyReason+" (or llm.api_key) set; nothing was sent"))
	}
	req, err := parseRelay(call.Body, call.MaxTokens, call.Model)
	if err != nil {
		return nil, newErr(Permanent, "bad_request", err)
	}
	if !c.pricing.Known(req.model) {
		// An unpriced model would reserve and settle at $0, outside the
		// USD limits.
		return nil, newErr(Permanent, "unknown_model", fmt.Errorf("model %q has no price in mull's pricing table (llm.prices); nothing was sent", req.model))
	}
	m := c.cfg.ForKind(call.Kind)
	m.Model, m.MaxTokens = req.model, req.maxTokens
	start := c.now()
	rec := store.LLMCall{JobID: call.JobID, Kind: call.Kind, Workspace: call.Workspace, Model: m.Model, CreatedAt: start,
		Messages: c.keptMessages(req.messages)}
	promptEst := int64(len(req.body)) + 16
	resv, err := c.reserve(ctx, Call{Kind: call.Kind, JobID: call.JobID, Workspace: call.Workspace}, m, start, promptEst)
	if err != nil {
		var e *Error
		errors.As(err, &e)
		rec.Outcome, rec.ErrorReason, rec.Error = string(e.Class), e.Reason, truncate(err.Error(), 1000)
		c.finish(ctx, rec) // a refusal is recorded, as Complete records it
		return nil, err
	}
	c.start(ctx, &rec)
	r := &relay{c: c, resv: resv, rec: rec, stream: req.stream,
		reserved: Usage{PromptTokens: promptEst, CacheMissTokens: promptEst, CompletionTokens: int64(req.maxTokens)}}
	r.scan.keep = c.cfg.KeepPromptsFor() > 0
	rctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout.D())
	r.cancel = cancel
	resp, err := c.send(rctx, call, req.body)
	if err != nil {
		r.fail(classify(rctx, err, 0))
		return nil, r.err
	}
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		r.fail(statusError(resp.StatusCode, apiMessage(b), parseRetryAfter(resp.Header.Get("Retry-After"), c.now())))
		return &Relayed{Status: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(b)), Failure: r.err}, nil
	}
	r.upstream = resp.Body
	return &Relayed{Status: resp.StatusCode, Header: resp.Header, Body: r}, nil
}

// send posts the body to DeepSeek with mull's key.
func (c *Client) send(ctx context.Context, call RelayCall, body []byte) (*http.Response, error) {
	url := strings.TrimSuffix(c.cfg.BaseURL, "/") + "/chat/completions"
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range call.Header {
		hr.Header[k] = v
	}
	hr.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("X-Mull-Job-Kind", call.Kind)
	return c.hc.Do(hr)
}

// relayRequest is what Relay reads of a request, and the body it sends.
type relayRequest struct {
	model     string
	messages  []Message
	maxTokens int
	stream    bool
	body      []byte
}

// parseRelay reads a chat request and rewrites its model (to model, when
// set), its max_tokens (capped) and, when it streams, stream_options.include_usage (on: the last chunk
// then carries the usage the budget is settled with).
func parseRelay(body []byte, limit int, model string) (relayRequest, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return relayRequest{}, fmt.Errorf("the body is not a JSON object: %w", err)
	}
	var in struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		MaxTokens int  `json:"max_tokens"`
		Stream    bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return relayRequest{}, fmt.Errorf("the body is not a chat completion request: %w", err)
	}
	switch {
	case in.Model == "" || len(in.Messages) == 0:
		return relayRequest{}, errors.New("the body needs a model and messages")
	case len(in.Model) > 200 || strings.ContainsRune(in.Model, 0):
		return relayRequest{}, fmt.Errorf("model: %q is no model name", truncate(in.Model, 40))
	}
	r := relayRequest{model: in.Model, maxTokens: limit, stream: in.Stream}
	if model != "" {
		r.model = model
		fields["model"], _ = json.Marshal(model)
	}
	if in.MaxTokens > 0 && (limit <= 0 || in.MaxTokens < limit) {
		r.maxTokens = in.MaxTokens
	}
	for _, m := range in.Messages {
		r.messages = append(r.messages, Message{Role: m.Role, Content: contentText(m.Content)})
	}
	if r.maxTokens > 0 {
		fields["max_tokens"], _ = json.Marshal(r.maxTokens)
	}
	if in.Stream {
		var opts map[string]json.RawMessage
		_ = json.Unmarshal(fields["stream_options"], &opts)
		if opts == nil {
			opts = map[string]json.RawMessage{}
		}
		opts["include_usage"] = json.RawMessage("true")
		fields["stream_options"], _ = json.Marshal(opts)
	}
	var err error
	r.body, err = json.Marshal(fields)
	return r, err
}

// contentText is a message's text: a string, or the text parts of a list
// (an assistant's message of only tool calls has none).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// apiMessage is an error body's message ({"error": {"message": …}}), or
// the body itself.
func apiMessage(b []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return strings.TrimSpace(string(b))
}

// relay is a relayed answer's body: it passes DeepSeek's bytes through,
// watching them for the usage, and settles the call when closed.
type relay struct {
	c        *Client
	resv     *budget.Reservation
	rec      store.LLMCall
	stream   bool
	upstream io.ReadCloser
	cancel   context.CancelFunc
	// reserved is the usage the reservation was made for (every prompt
	// byte a cache-missed token, max_tokens generated): what an answer
	// cut before its usage is charged.
	reserved Usage

	scan  usageScan
	err   *Error
	once  sync.Once
	ended bool // the upstream body was read to its end
}

func (r *relay) Read(p []byte) (int, error) {
	n, err := r.upstream.Read(p)
	r.scan.write(p[:n], r.stream)
	if errors.Is(err, io.EOF) {
		r.ended = true
	}
	return n, err
}

// Close settles the budget and finishes the record: to the usage read,
// ok, when the answer was read through and had it. An answer cut before
// its usage (the client left, or the stream was cut) is charged its
// reservation, DeepSeek billing what it generated whether or not anyone
// read it (else a cell could drop every stream before its end and spend
// for free), and recorded as a retryable "incomplete" with that usage.
// The record keeps the answer's text as far as it was read
// (llm.keep_prompts, redacted).
func (r *relay) Close() error {
	err := r.upstream.Close()
	r.once.Do(func() {
		u, spent := r.scan.usage(r.stream)
		r.rec.Response = r.c.keptResponse(r.scan.answer(r.stream))
		var fail *Error
		switch {
		case !spent:
			u = r.reserved
			fail = newErr(Retryable, "incomplete", fmt.Errorf("the relayed answer ended before its usage arrived (the client left, or the stream was cut); charged its reservation (%d prompt, %d completion tokens)", u.PromptTokens, u.CompletionTokens))
		case !r.ended:
			fail = newErr(Retryable, "incomplete", errors.New("the relayed answer ended before its end (the client left, or the stream was cut)"))
		}
		r.finish(u, true, fail)
	})
	return err
}

// fail finishes a call that got no answer to pass on.
func (r *relay) fail(e *Error) {
	r.once.Do(func() { r.finish(Usage{}, false, e) })
}

func (r *relay) finish(u Usage, spent bool, fail *Error) {
	defer r.cancel()
	ctx := context.Background()
	start := r.rec.CreatedAt
	r.c.settle(ctx, r.resv, u, spent, r.rec.Model, start)
	r.rec.LatencyMS = r.c.now().Sub(start).Milliseconds()
	r.rec.PromptTokens, r.rec.CompletionTokens = u.PromptTokens, u.CompletionTokens
	r.rec.CacheHitTokens, r.rec.CacheMissTokens = u.CacheHitTokens, u.CacheMissTokens
	r.rec.CostNanoUSD = r.c.pricing.Cost(r.rec.Model, start, u)
	r.rec.Outcome = "ok"
	if fail != nil {
		r.err = fail
		r.rec.Outcome, r.rec.ErrorReason, r.rec.Error = string(fail.Class), fail.Reason, truncate(fail.Error(), 1000)
	}
	r.c.finish(ctx, r.rec)
}

// maxSSELine bounds one line the scan keeps while it waits for its end;
// a longer one is a content chunk, never the usage chunk, and is skipped.
const maxSSELine = 1 << 20

// usageScan finds the usage in an answer: the last SSE data line that
// has one (DeepSeek sends it in the final chunk with include_usage), or
// the body of a non-streamed answer. With keep, it also gathers the
// answer's text from the stream's deltas (content and reasoning_content),
// for the record.
type usageScan struct {
	line  []byte
	over  bool
	whole []byte
	last  []byte

	keep               bool
	content, reasoning strings.Builder
}

func (s *usageScan) write(p []byte, stream bool) {
	if !stream {
		if len(s.whole)+len(p) <= maxResponseBody {
			s.whole = append(s.whole, p...)
		}
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.add(p)
			return
		}
		s.add(p[:i])
		s.end()
		p = p[i+1:]
	}
}

func (s *usageScan) add(p []byte) {
	if s.over || len(s.line)+len(p) > maxSSELine {
		s.over, s.line = true, s.line[:0]
		return
	}
	s.line = append(s.line, p...)
}

func (s *usageScan) end() {
	data, ok := bytes.CutPrefix(bytes.TrimSpace(s.line), []byte("data:"))
	if !s.over && ok && bytes.Contains(data, []byte(`"usage"`)) {
		if _, has := usageFrom(data); has {
			s.last = append(s.last[:0], data...)
		}
	}
	if s.keep && !s.over && ok && bytes.Contains(data, []byte(`"delta"`)) {
		var chunk struct {
			Choices []struct {
				Delta replyText `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal(data, &chunk) == nil && len(chunk.Choices) > 0 &&
			s.content.Len()+s.reasoning.Len() < maxResponseBody {
			s.content.WriteString(chunk.Choices[0].Delta.Content)
			s.reasoning.WriteString(chunk.Choices[0].Delta.ReasoningContent)
		}
	}
	s.line, s.over = s.line[:0], false
}

// replyText is the text of an answer's message, or of a stream chunk's
// delta.
type replyText struct {
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content"`
}

// answer is the answer's text (content, reasoning) as far as it was read:
// the streamed deltas joined, or a whole answer's first message. Call it
// after usage, which ends a last line without its newline.
func (s *usageScan) answer(stream bool) (string, string) {
	if stream {
		return s.content.String(), s.reasoning.String()
	}
	var body struct {
		Choices []struct {
			Message replyText `json:"message"`
		} `json:"choices"`
	}
	if !s.keep || json.Unmarshal(s.whole, &body) != nil || len(body.Choices) == 0 {
		return "", ""
	}
	return body.Choices[0].Message.Content, body.Choices[0].Message.ReasoningContent
}

func (s *usageScan) usage(stream bool) (Usage, bool) {
	if !stream {
		return usageFrom(s.whole)
	}
	if len(s.line) > 0 {
		s.end() // a last line without its newline
	}
	return usageFrom(s.last)
}
