package fakeds

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// answer is the message the fake sends back: text, or one tool call.
type answer struct {
	content, reasoning, finish string
	call                       *toolCall
}

// compose builds the answer: the default responder's reply or the rule's,
// then the rule's fault, then the max_tokens cut.
func (s *Server) compose(req *chatRequest, p Prompt, rule Rule) answer {
	a := answer{content: s.reply(p), finish: "stop"}
	if req.Thinking.get() != "disabled" { // thinking is on by default
		a.reasoning = "fake-deepseek thinking: answering with the canned reply for prompt type " + cmp.Or(p.Type, "(none)") + "."
	}
	if resp := rule.Response; resp != nil {
		a.content = cmp.Or(resp.Content, a.content)
		a.reasoning = resp.ReasoningContent
		a.finish = cmp.Or(resp.FinishReason, "stop")
	}
	switch rule.Fault {
	case FaultBlank:
		a.content = ""
	case FaultTruncated:
		a.content, a.finish = truncate(a.content), "length"
	case FaultInvalidJSON:
		a.content = invalidJSON
	case FaultWrongSchema:
		a.content = wrongSchema
	}
	return a.limit(cmp.Or(req.MaxTokens, req.MaxCompletionTokens))
}

// limit cuts the answer to maxTokens, reasoning first, as max_tokens does
// on DeepSeek; a cut answer finishes with "length".
func (a answer) limit(maxTokens int) answer {
	if maxTokens <= 0 || TextTokens(a.reasoning)+TextTokens(a.content) <= maxTokens {
		return a
	}
	a.finish = "length"
	if rt := TextTokens(a.reasoning); rt >= maxTokens {
		a.reasoning, a.content = cutBytes(a.reasoning, maxTokens*bytesPerToken), ""
		return a
	}
	a.content = cutBytes(a.content, (maxTokens-TextTokens(a.reasoning))*bytesPerToken)
	return a
}

// usage counts the tokens of a request and its answer, splitting the prompt
// by the prefix cache, then applies a script's override.
func (s *Server) usage(req *chatRequest, msgs []Message, a answer, resp *Response) Usage {
	scope := req.Model
	if s.opts.CachePerUser {
		scope += "\x00" + req.UserID
	}
	in := prefixKeys(scope, msgs)
	out := prefixKeys(scope, append(msgs[:len(msgs):len(msgs)], Message{Role: "assistant", Content: a.content}))
	prompt, unit := len(in), s.opts.CacheUnit
	s.mu.Lock()
	hit := s.cache.request(in, out, unit, max(0, s.opts.CacheInterval)/unit*unit)
	s.mu.Unlock()
	u := Usage{
		PromptTokens: prompt, PromptCacheHitTokens: hit, PromptCacheMissTokens: prompt - hit,
		CompletionTokens: TextTokens(a.content) + TextTokens(a.reasoning),
	}
	if c := a.call; c != nil {
		u.CompletionTokens += TextTokens(c.name) + TextTokens(c.arguments)
	}
	if rt := TextTokens(a.reasoning); rt > 0 {
		u.CompletionTokensDetails = &CompletionTokensDetails{ReasoningTokens: rt}
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if resp != nil && resp.Usage != nil {
		o := resp.Usage
		set := func(dst *int, v *int) {
			if v != nil {
				*dst = *v
			}
		}
		set(&u.PromptTokens, o.PromptTokens)
		set(&u.CompletionTokens, o.CompletionTokens)
		set(&u.PromptCacheHitTokens, o.PromptCacheHitTokens)
		set(&u.PromptCacheMissTokens, o.PromptCacheMissTokens)
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		set(&u.TotalTokens, o.TotalTokens)
	}
	return u
}

// keepAlives is how many keep-alive lines span delay (3s when unset): one
// every KeepAliveEvery, at least one.
func (s *Server) keepAlives(delay time.Duration) int {
	delay = cmp.Or(delay, 3*time.Second)
	return max(1, int((delay+s.opts.KeepAliveEvery-1)/s.opts.KeepAliveEvery))
}

// hold sends the 200 header, then a keep-alive line every KeepAliveEvery:
// n of them, or (n < 0) until the client goes away or the server closes. It
// reports whether the answer should follow. Non-streaming keep-alives are
// empty lines before the JSON body; streaming ones are SSE comments.
func (s *Server) hold(r *http.Request, w http.ResponseWriter, stream bool, n int) bool {
	line := "\n"
	if stream {
		line = ": keep-alive\n\n"
		setStreamHeaders(w)
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush() // a writer that cannot flush still gets the lines
	tick := time.NewTicker(s.opts.KeepAliveEvery)
	defer tick.Stop()
	for i := 0; n < 0 || i < n; i++ {
		select {
		case <-r.Context().Done():
			return false
		case <-s.done:
			return false
		case <-tick.C:
		}
		if _, err := io.WriteString(w, line); err != nil {
			return false
		}
		_ = rc.Flush()
	}
	return true
}

func setStreamHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
}

// streamPiece is how many bytes of content each chunk carries.
const streamPiece = 16

// stream sends the answer as SSE chunks: the role, the reasoning, the
// content or the tool call, a last chunk with the finish reason and the usage, then [DONE].
func (s *Server) stream(w http.ResponseWriter, head completion, a answer, u Usage, held bool) {
	if !held {
		setStreamHeaders(w)
		w.WriteHeader(http.StatusOK)
	}
	rc := http.NewResponseController(w)
	send := func(d delta, finish *string, usage *Usage) bool {
		c := chunk{
			ID: head.ID, Object: "chat.completion.chunk", Created: head.Created, Model: head.Model,
			SystemFingerprint: head.SystemFingerprint, Usage: usage,
			Choices: []chunkChoice{{Delta: d, FinishReason: finish}},
		}
		b, _ := json.Marshal(c)
		if _, err := io.WriteString(w, "data: "+string(b)+"\n\n"); err != nil {
			return false
		}
		_ = rc.Flush()
		return true
	}
	empty := ""
	if !send(delta{Role: "assistant", Content: &empty}, nil, nil) {
		return
	}
	for _, p := range pieces(a.reasoning) {
		if !send(delta{ReasoningContent: &p}, nil, nil) {
			return
		}
	}
	for _, p := range pieces(a.content) {
		if !send(delta{Content: &p}, nil, nil) {
			return
		}
	}
	for _, tc := range a.call.chunks() {
		if !send(delta{ToolCalls: []wireToolCall{tc}}, nil, nil) {
			return
		}
	}
	if !send(delta{Content: &empty}, &a.finish, &u) {
		return
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// pieces splits s into chunks of about streamPiece bytes at rune boundaries.
func pieces(s string) []string {
	var out []string
	for s != "" {
		p := cutBytes(s, streamPiece)
		out = append(out, p)
		s = s[len(p):]
	}
	return out
}
