package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on one event, in bytes. README's "Limits on input" lists them.
const (
	MaxIDLen   = 256      // an event, session, task or tool call id
	MaxPath    = 4096     // the workspace, an observed file's path (PATH_MAX)
	MaxName    = 128      // a tool name, an error code, session_end's reason
	MaxTitle   = 512      // a session's title, a task's goal
	MaxSummary = 8 << 10  // a task's expected result or result, a feedback text
	MaxText    = 64 << 10 // a message, an error text, a command
	MaxOutput  = 8 << 10  // a tool's output, cut by producers before sending
	// MaxReasoning bounds an assistant message's reasoning, cut by producers
	// before sending: the reflection quotes a few hundred characters of it
	// at most, so more is storage for nothing.
	MaxReasoning = 8 << 10
	MaxBatch     = 1000
	maxFutureAt  = 24 * time.Hour
)

// FieldError names what is wrong: which event of a batch, which field.
type FieldError struct {
	// Index is the event's position in its batch.
	Index int
	// Field is a JSON path inside the event, such as "payload.exit_code".
	Field   string
	Problem string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("event %d: %s: %s", e.Index, e.Field, e.Problem)
}

// ValidateBatch checks every event of a batch, stopping at the first bad
// one: a batch is stored whole or not at all. now bounds times in the future.
func ValidateBatch(batch []Event, now time.Time) error {
	if len(batch) == 0 {
		return &FieldError{Index: -1, Field: "events", Problem: "batch is empty"}
	}
	if len(batch) > MaxBatch {
		return &FieldError{Index: -1, Field: "events", Problem: fmt.Sprintf("%d events; at most %d per batch", len(batch), MaxBatch)}
	}
	for i := range batch {
		if err := Validate(&batch[i], now); err != nil {
			err.Index = i
			return err
		}
	}
	return nil
}

// Validate checks one event and normalizes it (UTC time, {} payload).
func Validate(e *Event, now time.Time) *FieldError {
	bad := func(field, format string, args ...any) *FieldError {
		return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"id", e.ID, MaxIDLen}, {"type", string(e.Type), MaxName}, {"session_id", e.SessionID, MaxIDLen}, {"workspace", e.Workspace, MaxPath}} {
		if problem := CheckName(f.v, f.max); problem != "" {
			return bad(f.name, "%s", problem)
		}
	}
	switch {
	case strings.TrimSpace(e.ID) == "":
		return bad("id", "required")
	case e.Type == "":
		return bad("type", "required")
	case strings.TrimSpace(e.SessionID) == "":
		return bad("session_id", "required")
	case e.Workspace == "":
		return bad("workspace", "required (the DSH cwd)")
	case !path.IsAbs(e.Workspace) && !isWindowsAbs(e.Workspace):
		return bad("workspace", "%q is not an absolute path", e.Workspace)
	case e.Time.IsZero():
		return bad("time", "required (RFC 3339)")
	case e.Time.After(now.Add(maxFutureAt)):
		return bad("time", "%s is more than a day in the future", e.Time.UTC().Format(time.RFC3339))
	}
	p, ok := payloadOf(e.Type)
	if !ok {
		return bad("type", "unknown type %q", e.Type)
	}
	e.Time = e.Time.UTC()
	if len(bytes.TrimSpace(e.Payload)) == 0 || string(bytes.TrimSpace(e.Payload)) == "null" {
		e.Payload = json.RawMessage("{}")
	}
	if f, problem := CheckJSON(e.Payload, 0); problem != "" {
		return bad(strings.TrimSuffix("payload."+f, "."), "%s", problem)
	}
	dec := json.NewDecoder(bytes.NewReader(e.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return bad("payload", "%s", payloadErr(err))
	}
	if f, problem := checkPayload(p); f != "" {
		return bad("payload."+f, "%s", problem)
	}
	if m, ok := p.(*MessagePayload); ok && e.Type != AssistantMessage && m.Reasoning != "" {
		return bad("payload.reasoning", "only an assistant_message has reasoning")
	}
	return nil
}

func isWindowsAbs(p string) bool {
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}

// CheckText reports what is wrong with a free text of at most max bytes
// (max <= 0: no cap): invalid UTF-8 or a NUL, which no database column
// stores faithfully (PostgreSQL refuses NUL in text; SQLite keeps it and C
// readers stop at it). "" means it is fine.
func CheckText(s string, max int) string {
	switch {
	case max > 0 && len(s) > max:
		return fmt.Sprintf("longer than %d bytes", max)
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character (U+0000)"
	}
	return ""
}

// CheckName is CheckText for an identifier, path or short label: besides,
// no control character at all (C0, DEL, C1), so it stays one printable line
// wherever it is shown or logged.
func CheckName(s string, max int) string {
	if problem := CheckText(s, max); problem != "" {
		return problem
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Sprintf("contains the control character %U", r)
		}
	}
	return ""
}

func payloadErr(err error) string {
	var te *json.UnmarshalTypeError
	if ok := asTypeErr(err, &te); ok {
		return fmt.Sprintf("field %q: want %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func asTypeErr(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*te = t
	}
	return ok
}

// checkPayload applies the rules JSON decoding cannot: required fields,
// enums, bytes and lengths. It returns the bad field and the problem.
func checkPayload(p any) (string, string) {
	for _, f := range payloadStrings(p) {
		problem := ""
		if f.name {
			problem = CheckName(f.v, f.max)
		} else {
			problem = CheckText(f.v, f.max)
		}
		switch {
		case problem != "":
			return f.field, problem
		case f.required && strings.TrimSpace(f.v) == "":
			return f.field, "required"
		}
	}
	oneOf := func(field, v string, allowed ...string) (string, string) {
		for _, a := range allowed {
			if v == a {
				return "", ""
			}
		}
		return field, fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", "))
	}
	switch p := p.(type) {
	case *MessagePayload:
		if len(p.Reasoning) > MaxReasoning {
			return "reasoning", fmt.Sprintf("longer than %d bytes; cut it before sending", MaxReasoning)
		}
		if p.Source != "" {
			return oneOf("source", p.Source, "user", "plugin")
		}
	case *TurnEndPayload:
		if p.Turn < 0 {
			return "turn", "must not be negative"
		}
		return oneOf("reason", p.Reason, "completed", "error", "aborted", "max-tokens")
	case *TaskClosePayload:
		return oneOf("status", p.Status, TaskStatuses...)
	case *ToolResultPayload:
		if len(p.Output) > MaxOutput {
			return "output", fmt.Sprintf("longer than %d bytes; cut it before sending", MaxOutput)
		}
	case *FeedbackPayload:
		return oneOf("rating", p.Rating, "down", "up", "none")
	case *FSObservedPayload:
		return oneOf("op", p.Op, "create", "modify", "delete")
	case *UsagePayload:
		return checkUsage(p)
	case *ErrorPayload:
		if p.Status != 0 && (p.Status < 100 || p.Status > 599) {
			return "status", fmt.Sprintf("%d is not an HTTP status (100-599)", p.Status)
		}
	}
	return "", ""
}

// checkUsage bounds a usage event's counts: none negative or absurd, the
// reasoning part within the output, and a turn and step that say where.
func checkUsage(p *UsagePayload) (string, string) {
	counts := []struct {
		field string
		n     int64
	}{{"input_tokens", p.InputTokens}, {"cache_read_tokens", p.CacheReadTokens}, {"output_tokens", p.OutputTokens}}
	if p.ReasoningTokens != nil {
		counts = append(counts, struct {
			field string
			n     int64
		}{"reasoning_tokens", *p.ReasoningTokens})
	}
	for _, c := range counts {
		switch {
		case c.n < 0:
			return c.field, "must not be negative"
		case c.n > MaxTokens:
			return c.field, fmt.Sprintf("%d is more than %d tokens", c.n, int64(MaxTokens))
		}
	}
	switch {
	case p.ReasoningTokens != nil && *p.ReasoningTokens > p.OutputTokens:
		return "reasoning_tokens", fmt.Sprintf("%d is more than output_tokens (%d), which include them", *p.ReasoningTokens, p.OutputTokens)
	case p.Turn < 0:
		return "turn", "must not be negative"
	case p.Step < 0:
		return "step", "must not be negative"
	}
	return "", ""
}

// payloadString is one string field of a payload and its rules: a name is
// one line of printable text, a text may hold lines, tabs and terminal
// escapes but never NUL.
type payloadString struct {
	field, v       string
	max            int
	name, required bool
}

// payloadStrings lists every string field of a payload, so no field
// escapes the byte checks. A new payload field belongs here.
func payloadStrings(p any) []payloadString {
	name := func(field, v string, max int, required bool) payloadString {
		return payloadString{field: field, v: v, max: max, name: true, required: required}
	}
	text := func(field, v string, max int, required bool) payloadString {
		return payloadString{field: field, v: v, max: max, required: required}
	}
	switch p := p.(type) {
	case *SessionStartPayload:
		return []payloadString{text("title", p.Title, MaxTitle, false), name("parent", p.Parent, MaxIDLen, false)}
	case *SessionEndPayload:
		return []payloadString{name("reason", p.Reason, MaxName, false)}
	case *MessagePayload:
		// text is required unless there is reasoning (checked below, with
		// the type); reasoning's cap is checked below too, with advice.
		return []payloadString{text("text", p.Text, MaxText, strings.TrimSpace(p.Reasoning) == ""), name("source", p.Source, MaxName, false),
			name("message_id", p.MessageID, MaxIDLen, false), text("reasoning", p.Reasoning, 0, false)}
	case *TurnEndPayload:
		return []payloadString{name("reason", p.Reason, MaxName, false), text("error", p.Error, MaxText, false)}
	case *TaskOpenPayload:
		return []payloadString{name("task_id", p.TaskID, MaxIDLen, true), text("goal", p.Goal, MaxTitle, true),
			text("expected_result", p.ExpectedResult, MaxSummary, false)}
	case *TaskClosePayload:
		return []payloadString{name("task_id", p.TaskID, MaxIDLen, true), name("status", p.Status, MaxName, false),
			text("result", p.Result, MaxSummary, false)}
	case *ToolResultPayload:
		return []payloadString{name("call_id", p.CallID, MaxIDLen, false), name("tool", p.Tool, MaxName, true),
			text("command", p.Command, MaxText, false), name("error_code", p.ErrorCode, MaxName, false),
			text("output", p.Output, 0, false)} // capped below, with advice
	case *ErrorPayload:
		return []payloadString{text("message", p.Message, MaxText, true), name("code", p.Code, MaxName, false),
			name("request_id", p.RequestID, MaxIDLen, false)}
	case *UsagePayload:
		return []payloadString{name("model", p.Model, MaxName, false), name("provider", p.Provider, MaxName, false)}
	case *SessionTitlePayload:
		return []payloadString{text("title", p.Title, MaxTitle, true), name("source", p.Source, MaxName, false)}
	case *FeedbackPayload:
		return []payloadString{name("rating", p.Rating, MaxName, false), text("text", p.Text, MaxSummary, false),
			name("message_id", p.MessageID, MaxIDLen, false)}
	case *FSObservedPayload:
		return []payloadString{text("path", p.Path, MaxPath, true), name("op", p.Op, MaxName, false)}
	}
	return nil
}
