package fakeds

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// maxBody bounds a request body, as a real server would.
const maxBody = 64 << 20

// ServeHTTP answers one request: chat completions, the model list, or a
// DeepSeek-shaped error.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	rec := s.begin(r, body)
	defer s.log(rec)
	switch {
	case err != nil:
		s.fail(w, rec, http.StatusBadRequest, "Failed to read the request body: "+err.Error(), 0)
	case !isPath(r, "/chat/completions") && !isPath(r, "/models"):
		s.fail(w, rec, http.StatusNotFound, "", 0)
	case !s.authorized(r):
		s.fail(w, rec, http.StatusUnauthorized, authMessage(r), 0)
	case isPath(r, "/models") && r.Method == http.MethodGet:
		s.models(w, rec)
	case isPath(r, "/models") || r.Method != http.MethodPost:
		s.fail(w, rec, http.StatusMethodNotAllowed, "", 0)
	default:
		s.chat(w, r, rec)
	}
}

// isPath matches a path with or without the /v1 prefix.
func isPath(r *http.Request, p string) bool {
	got := strings.TrimSuffix(r.URL.Path, "/")
	return got == p || got == "/v1"+p
}

func (s *Server) authorized(r *http.Request) bool {
	return s.opts.APIKey == "" || r.Header.Get("Authorization") == "Bearer "+s.opts.APIKey
}

// authMessage is DeepSeek's 401 message, which shows the key's last four.
func authMessage(r *http.Request) string {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || key == "" {
		return "Authentication Fails (no API key given)"
	}
	return fmt.Sprintf("Authentication Fails, Your api key: ****%s is invalid", key[max(0, len(key)-4):])
}

// fail sends an error and records it.
func (s *Server) fail(w http.ResponseWriter, rec *Recorded, status int, msg string, retryAfter int) {
	s.edit(rec, func(r *Recorded) { r.Status = status })
	writeError(w, status, msg, retryAfter)
}

func (s *Server) models(w http.ResponseWriter, rec *Recorded) {
	names := s.opts.Models
	if len(names) == 0 {
		names = []string{"deepseek-v4-flash", "deepseek-v4-pro"}
	}
	data := make([]map[string]string, len(names))
	for i, n := range names {
		data[i] = map[string]string{"id": n, "object": "model", "owned_by": "deepseek"}
	}
	s.edit(rec, func(r *Recorded) { r.Status = http.StatusOK })
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

// chat answers a chat completion request.
func (s *Server) chat(w http.ResponseWriter, r *http.Request, rec *Recorded) {
	req, msgs, bad := parseRequest(rec.Body, s.opts.Models)
	kinds := jobKinds(r, req)
	if req != nil {
		s.edit(rec, func(rc *Recorded) { rc.fill(req, msgs, kinds) })
	}
	if bad != nil {
		s.fail(w, rec, bad.status, bad.msg, 0)
		return
	}
	if a, ok := toolAnswer(req, msgs, rec.ID); ok { // before the script: see CallMarker
		s.send(w, rec, req, a, s.usage(req, msgs, a, nil), false)
		return
	}
	idx, rule := s.match(req, msgs, kinds)
	s.edit(rec, func(rc *Recorded) { rc.Rule, rc.Fault = idx, rule.Fault })
	if status := rule.Fault.status(); status != 0 {
		s.fail(w, rec, status, rule.Message, rule.RetryAfter)
		return
	}
	held := false
	switch rule.Fault {
	case FaultHang:
		s.edit(rec, func(rc *Recorded) { rc.Status = http.StatusOK })
		s.hold(r, w, req.Stream, -1)
		return
	case FaultSlow:
		s.edit(rec, func(rc *Recorded) { rc.Status = http.StatusOK })
		if !s.hold(r, w, req.Stream, s.keepAlives(rule.Delay)) {
			return
		}
		held = true
	}
	s.respond(w, rec, req, msgs, kinds, rule, held)
}

// respond sends the rule's answer (or the default reply); held says the 200
// header and keep-alive lines went out already.
func (s *Server) respond(w http.ResponseWriter, rec *Recorded, req *chatRequest, msgs []Message, kinds []string, rule Rule, held bool) {
	a := s.compose(req, newPrompt(msgs, req.ResponseFormat.get() == "json_object", kinds), rule)
	s.send(w, rec, req, a, s.usage(req, msgs, a, rule.Response), held)
}

// send records the usage and sends the answer, streamed or not; held says
// the 200 header and keep-alive lines went out already.
func (s *Server) send(w http.ResponseWriter, rec *Recorded, req *chatRequest, a answer, u Usage, held bool) {
	s.edit(rec, func(rc *Recorded) { rc.Status, rc.Usage = http.StatusOK, &u })
	out := completion{
		ID: rec.ID, Object: "chat.completion", Created: s.opts.Now().Unix(), Model: req.Model,
		SystemFingerprint: "fp_fakeds",
	}
	if req.Stream {
		s.stream(w, out, a, u, held)
		return
	}
	msg := replyMessage{Role: "assistant", Content: a.content, ReasoningContent: a.reasoning}
	if c := a.call; c != nil {
		msg.ToolCalls = []wireToolCall{c.wire()}
	}
	out.Choices = []choice{{Message: msg, FinishReason: a.finish}}
	out.Usage = u
	if !held {
		w.Header().Set("Content-Type", "application/json")
	}
	_ = json.NewEncoder(w).Encode(out)
}

// fill copies the parsed request into the record.
func (rc *Recorded) fill(req *chatRequest, msgs []Message, kinds []string) {
	rc.Model, rc.Messages, rc.Stream = req.Model, msgs, req.Stream
	rc.ResponseFormat, rc.Thinking = req.ResponseFormat.get(), req.Thinking.get()
	rc.ReasoningEffort, rc.UserID = req.ReasoningEffort, req.UserID
	rc.MaxTokens = cmp.Or(req.MaxTokens, req.MaxCompletionTokens)
	if len(kinds) > 0 {
		rc.Kind = kinds[0]
	}
}

// jobKinds are the job kinds a request names: the X-Mull-Job-Kind header
// first, then the kind in a user_id "mull:<kind>:<job id>".
func jobKinds(r *http.Request, req *chatRequest) []string {
	var kinds []string
	if k := r.Header.Get("X-Mull-Job-Kind"); k != "" {
		kinds = append(kinds, k)
	}
	if req != nil {
		if rest, ok := strings.CutPrefix(req.UserID, "mull:"); ok {
			if k, _, _ := strings.Cut(rest, ":"); k != "" {
				kinds = append(kinds, k)
			}
		}
	}
	return kinds
}

// match finds the first rule that applies and counts it against Times.
func (s *Server) match(req *chatRequest, msgs []Message, kinds []string) (int, Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.script == nil {
		return -1, Rule{}
	}
	for i := range s.script.Rules {
		r := &s.script.Rules[i]
		if !r.matches(req, msgs, kinds) || (r.Times > 0 && s.used[i] >= r.Times) {
			continue
		}
		s.used[i]++
		return i, *r
	}
	return -1, Rule{}
}

func (s *Server) log(rec *Recorded) {
	s.mu.Lock()
	r := *rec
	s.mu.Unlock()
	attrs := []any{"method", r.Method, "path", r.Path, "status", r.Status, "model", r.Model, "kind", r.Kind, "rule", r.Rule}
	if r.Fault != "" {
		attrs = append(attrs, "fault", string(r.Fault))
	}
	if r.Usage != nil {
		attrs = append(attrs, "prompt_tokens", r.Usage.PromptTokens, "cache_hit_tokens", r.Usage.PromptCacheHitTokens,
			"completion_tokens", r.Usage.CompletionTokens)
	}
	s.opts.Logger.Info("fake deepseek request", attrs...)
}

// badRequest is a request DeepSeek would refuse.
type badRequest struct {
	status int
	msg    string
}

var roles = []string{"system", "user", "assistant", "tool"}

// parseRequest reads and checks a chat completion body roughly as DeepSeek
// does: 400 for a malformed body, 422 for invalid parameters. The request
// comes back whenever the body parsed, so it can be recorded.
func parseRequest(body []byte, models []string) (*chatRequest, []Message, *badRequest) {
	if !json.Valid(body) {
		return nil, nil, &badRequest{http.StatusBadRequest, "Failed to parse the request body as JSON"}
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, nil, &badRequest{http.StatusUnprocessableEntity, "Failed to deserialize the JSON body into the target type: " + err.Error()}
	}
	msgs := make([]Message, len(req.Messages))
	for i, m := range req.Messages {
		text, ok := contentText(m.Content)
		msgs[i] = Message{Role: m.Role, Content: text}
		switch {
		case !slices.Contains(roles, m.Role):
			return &req, msgs, invalid("messages[%d].role: unknown variant `%s`, expected one of %s", i, m.Role, strings.Join(roles, ", "))
		case !ok:
			return &req, msgs, invalid("messages[%d].content: want a string or a list of text parts", i)
		}
	}
	return &req, msgs, checkRequest(&req, msgs, models)
}

func checkRequest(req *chatRequest, msgs []Message, models []string) *badRequest {
	switch rf, th := req.ResponseFormat.get(), req.Thinking.get(); {
	case req.Model == "":
		return invalid("missing field `model`")
	case len(models) > 0 && !slices.Contains(models, req.Model):
		return &badRequest{http.StatusBadRequest, "Model Not Exist"}
	case req.Messages == nil:
		return invalid("missing field `messages`")
	case len(msgs) == 0:
		return &badRequest{http.StatusBadRequest, "Empty input messages"}
	case req.ResponseFormat != nil && rf != "text" && rf != "json_object":
		return invalid("response_format.type: unknown variant `%s`, expected `text` or `json_object`", rf)
	case req.Thinking != nil && th != "enabled" && th != "disabled":
		return invalid("thinking.type: unknown variant `%s`, expected `enabled` or `disabled`", th)
	case req.MaxTokens < 0 || req.MaxCompletionTokens < 0:
		return invalid("max_tokens must be positive")
	case rf == "json_object" && !mentionsJSON(msgs):
		return &badRequest{http.StatusBadRequest,
			"Prompt must contain the word 'json' in some form to use 'response_format' of type 'json_object'."}
	}
	return nil
}

func invalid(format string, args ...any) *badRequest {
	return &badRequest{http.StatusUnprocessableEntity, fmt.Sprintf(format, args...)}
}

func mentionsJSON(msgs []Message) bool {
	return slices.ContainsFunc(msgs, func(m Message) bool { return strings.Contains(strings.ToLower(m.Content), "json") })
}

// contentText is the text of a message's content: a string, the text parts
// of a list, or nothing (an assistant message with only tool calls).
func contentText(raw json.RawMessage) (string, bool) {
	if isNull(raw) {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), true
}
