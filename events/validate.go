package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on one event.
const (
	MaxIDLen    = 256
	MaxText     = 64 << 10 // a message or error text
	MaxOutput   = 8 << 10  // a tool's output, cut by producers before sending
	MaxBatch    = 1000
	maxFutureAt = 24 * time.Hour
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
	switch {
	case strings.TrimSpace(e.ID) == "":
		return bad("id", "required")
	case len(e.ID) > MaxIDLen:
		return bad("id", "longer than %d bytes", MaxIDLen)
	case e.Type == "":
		return bad("type", "required")
	case strings.TrimSpace(e.SessionID) == "":
		return bad("session_id", "required")
	case len(e.SessionID) > MaxIDLen:
		return bad("session_id", "longer than %d bytes", MaxIDLen)
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
	dec := json.NewDecoder(bytes.NewReader(e.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return bad("payload", "%s", payloadErr(err))
	}
	if f, problem := checkPayload(p); f != "" {
		return bad("payload."+f, "%s", problem)
	}
	return nil
}

func isWindowsAbs(p string) bool {
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
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
// enums and lengths. It returns the bad field and the problem.
func checkPayload(p any) (string, string) {
	text := func(field, s string, required bool) (string, string) {
		switch {
		case required && strings.TrimSpace(s) == "":
			return field, "required"
		case len(s) > MaxText:
			return field, fmt.Sprintf("longer than %d bytes", MaxText)
		case !utf8.ValidString(s):
			return field, "not valid UTF-8"
		}
		return "", ""
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
		if f, m := text("text", p.Text, true); f != "" {
			return f, m
		}
		if p.Source != "" {
			return oneOf("source", p.Source, "user", "plugin")
		}
	case *TurnEndPayload:
		if p.Turn < 0 {
			return "turn", "must not be negative"
		}
		return oneOf("reason", p.Reason, "completed", "error", "aborted", "max-tokens")
	case *TaskOpenPayload:
		if f, m := text("task_id", p.TaskID, true); f != "" {
			return f, m
		}
		return text("title", p.Title, true)
	case *TaskClosePayload:
		if f, m := text("task_id", p.TaskID, true); f != "" {
			return f, m
		}
		return oneOf("outcome", p.Outcome, "done", "failed", "abandoned")
	case *ToolResultPayload:
		if f, m := text("tool", p.Tool, true); f != "" {
			return f, m
		}
		if len(p.Output) > MaxOutput {
			return "output", fmt.Sprintf("longer than %d bytes; cut it before sending", MaxOutput)
		}
		return text("command", p.Command, false)
	case *ErrorPayload:
		return text("message", p.Message, true)
	case *FeedbackPayload:
		if f, m := oneOf("rating", p.Rating, "down", "up"); f != "" {
			return f, m
		}
		return text("text", p.Text, false)
	case *FSObservedPayload:
		if f, m := text("path", p.Path, true); f != "" {
			return f, m
		}
		return oneOf("op", p.Op, "create", "modify", "delete")
	}
	return "", ""
}
