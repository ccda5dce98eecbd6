package fakeds

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Script decides, request by request, what the fake answers. The first rule
// that matches wins; a request no rule matches gets the default responder.
type Script struct {
	Rules []Rule
}

// Rule matches requests and answers them with a Response or a Fault.
// Every match field given must hold; a rule without any matches everything.
type Rule struct {
	// Model matches the request's model exactly.
	Model string
	// Marker matches when it appears in any message's content.
	Marker string
	// Kind matches the job kind, from the X-Mull-Job-Kind header or the
	// user_id body field "mull:<kind>:<job id>" (either will do).
	Kind string
	// Times limits the rule to the first Times requests it matches (then it
	// no longer matches and later rules get the chance): "fail twice, then
	// succeed". Zero means every time.
	Times int

	// Response is the answer; Fault, when set instead, is what goes wrong.
	Response *Response
	Fault    Fault
	// RetryAfter is the Retry-After header of a 429, in seconds.
	RetryAfter int
	// Delay is how long a "slow" fault holds the request, writing
	// keep-alive lines, before answering. Defaults to 3s.
	Delay time.Duration
	// Message replaces the error message of an HTTP fault.
	Message string
}

// Response is a scripted answer.
type Response struct {
	// Content is the reply. Empty means the default responder's reply (a
	// blank reply is the "blank" fault). In a script file it may be a string
	// or any JSON value, which is sent as its compact JSON text.
	Content string
	// FinishReason defaults to "stop".
	FinishReason string
	// ReasoningContent, when set, comes back beside the content.
	ReasoningContent string
	// Usage replaces the fields it sets in the computed usage; total_tokens
	// is recomputed unless set.
	Usage *UsageOverride
}

// UsageOverride sets some usage fields to fixed values.
type UsageOverride struct {
	PromptTokens          *int `json:"prompt_tokens"`
	CompletionTokens      *int `json:"completion_tokens"`
	TotalTokens           *int `json:"total_tokens"`
	PromptCacheHitTokens  *int `json:"prompt_cache_hit_tokens"`
	PromptCacheMissTokens *int `json:"prompt_cache_miss_tokens"`
}

// Fault is a failure the fake produces on demand.
type Fault string

// The faults. HTTP faults answer with that status and DeepSeek's error body;
// the others answer 200 with something a client must handle.
const (
	FaultBadRequest    Fault = "400"
	FaultUnauthorized  Fault = "401"
	FaultBalance       Fault = "402"
	FaultInvalidParams Fault = "422"
	FaultRateLimit     Fault = "429" // with Retry-After when RetryAfter > 0
	FaultServerError   Fault = "500"
	FaultOverloaded    Fault = "503"
	// FaultHang holds the request with keep-alive lines until the client
	// goes away (its deadline) or the server closes.
	FaultHang Fault = "hang"
	// FaultSlow holds the request with keep-alive lines for Delay, then
	// answers normally.
	FaultSlow Fault = "slow"
	// FaultBlank answers content "" with finish_reason "stop", as DeepSeek's
	// JSON mode sometimes does.
	FaultBlank Fault = "blank"
	// FaultTruncated answers a cut-off JSON prefix with finish_reason "length".
	FaultTruncated Fault = "truncated"
	// FaultInvalidJSON answers text that is not JSON, finish_reason "stop".
	FaultInvalidJSON Fault = "invalid_json"
	// FaultWrongSchema answers a valid JSON object without the fields the
	// prompt asked for.
	FaultWrongSchema Fault = "wrong_schema"
)

// Faults lists every fault, in the order the help text gives them.
var Faults = []Fault{
	FaultRateLimit, FaultServerError, FaultOverloaded, FaultBalance, FaultBadRequest,
	FaultUnauthorized, FaultInvalidParams, FaultHang, FaultSlow, FaultBlank,
	FaultTruncated, FaultInvalidJSON, FaultWrongSchema,
}

// status is the HTTP status of an HTTP fault, or 0.
func (f Fault) status() int {
	n, _ := strconv.Atoi(string(f))
	return n
}

var finishReasons = []string{"stop", "length", "content_filter", "tool_calls", "insufficient_system_resource"}

// ScriptError names the rule and field a script is wrong in.
type ScriptError struct {
	// Rule is the index of the rule, or -1 for the script as a whole.
	Rule int
	// Field is the field's name in the script file ("fault", "response.content").
	Field string
	Msg   string
}

func (e *ScriptError) Error() string {
	switch {
	case e.Rule < 0 && e.Field == "":
		return e.Msg
	case e.Rule < 0:
		return e.Field + ": " + e.Msg
	case e.Field == "":
		return fmt.Sprintf("rules[%d]: %s", e.Rule, e.Msg)
	default:
		return fmt.Sprintf("rules[%d].%s: %s", e.Rule, e.Field, e.Msg)
	}
}

// Validate reports the first thing wrong with the script, as a *ScriptError.
func (s *Script) Validate() error {
	for i := range s.Rules {
		if err := s.Rules[i].validate(); err != nil {
			err.Rule = i
			return err
		}
	}
	return nil
}

func (r *Rule) validate() *ScriptError {
	bad := func(field, format string, args ...any) *ScriptError {
		return &ScriptError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case r.Response == nil && r.Fault == "":
		return bad("", "give a response or a fault")
	case r.Response != nil && r.Fault != "":
		return bad("", "give a response or a fault, not both")
	case r.Fault != "" && !slices.Contains(Faults, r.Fault):
		return bad("fault", "unknown fault %q (want one of %s)", r.Fault, faultList())
	case r.Times < 0:
		return bad("times", "%d is negative (0 means every time)", r.Times)
	case r.RetryAfter < 0:
		return bad("retry_after", "%d is negative", r.RetryAfter)
	case r.RetryAfter > 0 && r.Fault != FaultRateLimit:
		return bad("retry_after", "only a 429 fault has a Retry-After")
	case r.Delay < 0:
		return bad("delay", "%s is negative", r.Delay)
	case r.Delay > 0 && r.Fault != FaultSlow:
		return bad("delay", "only a slow fault has a delay")
	case r.Message != "" && r.Fault.status() == 0:
		return bad("message", "only an HTTP fault (400, 401, 402, 422, 429, 500, 503) has a message")
	}
	if r.Response != nil && r.Response.FinishReason != "" && !slices.Contains(finishReasons, r.Response.FinishReason) {
		return bad("response.finish_reason", "unknown finish_reason %q (want one of %s)",
			r.Response.FinishReason, strings.Join(finishReasons, ", "))
	}
	return nil
}

func faultList() string {
	s := make([]string, len(Faults))
	for i, f := range Faults {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// matches says whether the rule applies to a request (Times aside).
func (r *Rule) matches(req *chatRequest, msgs []Message, kinds []string) bool {
	if r.Model != "" && r.Model != req.Model {
		return false
	}
	if r.Kind != "" && !slices.Contains(kinds, r.Kind) {
		return false
	}
	if r.Marker != "" && !slices.ContainsFunc(msgs, func(m Message) bool { return strings.Contains(m.Content, r.Marker) }) {
		return false
	}
	return true
}
