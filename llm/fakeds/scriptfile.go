package fakeds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// LoadScript reads and checks a script file (see ParseScript).
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseScript reads a script in JSON:
//
//	{"rules": [
//	  {"kind": "retro_session", "times": 2, "fault": "429", "retry_after": 3},
//	  {"marker": "FAIL-HERE", "fault": "500"},
//	  {"model": "deepseek-v4-pro", "fault": "slow", "delay": "2s"},
//	  {"kind": "llm_probe", "response": {"content": {"ok": true, "echo": "hi"}}}
//	]}
//
// Errors are *ScriptError values naming the rule and the field.
func ParseScript(data []byte) (*Script, error) {
	var file struct {
		Rules []json.RawMessage `json:"rules"`
	}
	if err := strictDecode(data, &file); err != nil {
		e := decodeError("", data, err, "rules")
		e.Rule = -1
		return nil, e
	}
	if file.Rules == nil {
		return nil, &ScriptError{Rule: -1, Field: "rules", Msg: "missing: give a list of rules"}
	}
	s := &Script{Rules: make([]Rule, len(file.Rules))}
	for i, raw := range file.Rules {
		err := parseRule(raw, &s.Rules[i])
		if err == nil {
			err = s.Rules[i].validate()
		}
		if err != nil {
			err.Rule = i
			return nil, err
		}
	}
	return s, nil
}

// ruleFile is a rule as written; the fields that take more than one form
// stay raw so each error can name its field.
type ruleFile struct {
	Model      string          `json:"model"`
	Marker     string          `json:"marker"`
	Kind       string          `json:"kind"`
	Times      int             `json:"times"`
	Response   json.RawMessage `json:"response"`
	Fault      json.RawMessage `json:"fault"`
	RetryAfter int             `json:"retry_after"`
	Delay      json.RawMessage `json:"delay"`
	Message    string          `json:"message"`
}

type responseFile struct {
	Content          json.RawMessage `json:"content"`
	FinishReason     string          `json:"finish_reason"`
	ReasoningContent string          `json:"reasoning_content"`
	Usage            json.RawMessage `json:"usage"`
}

func parseRule(raw json.RawMessage, r *Rule) *ScriptError {
	var f ruleFile
	if err := strictDecode(raw, &f); err != nil {
		return decodeError("", raw, err, "model, marker, kind, times, response, fault, retry_after, delay, message")
	}
	*r = Rule{Model: f.Model, Marker: f.Marker, Kind: f.Kind, Times: f.Times, RetryAfter: f.RetryAfter, Message: f.Message}
	var err *ScriptError
	if r.Fault, err = parseFault(f.Fault); err != nil {
		return err
	}
	if r.Delay, err = parseDelay(f.Delay); err != nil {
		return err
	}
	if isNull(f.Response) {
		return nil
	}
	r.Response, err = parseResponse(f.Response)
	return err
}

func parseResponse(raw json.RawMessage) (*Response, *ScriptError) {
	var f responseFile
	if err := strictDecode(raw, &f); err != nil {
		return nil, decodeError("response", raw, err, "content, finish_reason, reasoning_content, usage")
	}
	resp := &Response{FinishReason: f.FinishReason, ReasoningContent: f.ReasoningContent}
	if !isNull(f.Content) {
		var s string
		if err := json.Unmarshal(f.Content, &s); err == nil {
			resp.Content = s
		} else {
			var b bytes.Buffer
			_ = json.Compact(&b, f.Content)
			resp.Content = b.String()
		}
	}
	if !isNull(f.Usage) {
		resp.Usage = new(UsageOverride)
		if err := strictDecode(f.Usage, resp.Usage); err != nil {
			return nil, decodeError("response.usage", f.Usage, err,
				"prompt_tokens, completion_tokens, total_tokens, prompt_cache_hit_tokens, prompt_cache_miss_tokens")
		}
	}
	return resp, nil
}

// parseFault takes "429" or 429.
func parseFault(raw json.RawMessage) (Fault, *ScriptError) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return Fault(s), nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return Fault(strconv.Itoa(n)), nil
	}
	return "", fieldError("fault", fmt.Sprintf("want a string such as \"429\" or \"hang\", got %s", raw))
}

// parseDelay takes a Go duration string ("1.5s") or a number of seconds.
func parseDelay(raw json.RawMessage) (time.Duration, *ScriptError) {
	if isNull(raw) {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fieldError("delay", fmt.Sprintf("%q is not a duration such as \"2s\"", s))
		}
		return d, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err == nil {
		return time.Duration(secs * float64(time.Second)), nil
	}
	return 0, fieldError("delay", fmt.Sprintf("want a duration such as \"2s\" or a number of seconds, got %s", raw))
}

func fieldError(field, msg string) *ScriptError { return &ScriptError{Field: field, Msg: msg} }

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// decodeError turns a decoding error into a ScriptError naming the field
// (under prefix) and, for syntax errors, the line.
func decodeError(prefix string, data []byte, err error, known string) *ScriptError {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		line := 1 + bytes.Count(data[:min(int(syntax.Offset), len(data))], []byte("\n"))
		return fieldError(prefix, fmt.Sprintf("invalid JSON at line %d: %v", line, syntax))
	case errors.As(err, &typ):
		return fieldError(join(prefix, typ.Field), fmt.Sprintf("want %s, got %s", article(typ.Type.Kind().String()), typ.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return fieldError(join(prefix, name), "unknown field (known: "+known+")")
	case errors.Is(err, io.EOF):
		return fieldError(prefix, "empty")
	default:
		return fieldError(prefix, err.Error())
	}
}

func join(prefix, field string) string {
	if prefix == "" || field == "" {
		return prefix + field
	}
	return prefix + "." + field
}

func article(kind string) string {
	switch kind {
	case "int", "int64", "float64":
		return "a number"
	case "string":
		return "a string"
	case "struct", "map":
		return "an object"
	case "slice":
		return "a list"
	default:
		return kind
	}
}
