package fakeds

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// CallMarker starts a call marker, "[call:NAME {json args}]", in a user
// message. It lets a test make an agent that talks to the fake call a tool:
// a request that offers tools and has a user message with a call marker is
// answered by toolAnswer, not by the script or the responders, so agent
// tests (DSH's end-to-end run) need no second fake. Several markers in one
// message are called one after another, and a later call's arguments can
// quote an earlier result (MatchPlaceholder).
const CallMarker = "[call:"

// MatchPlaceholder starts a placeholder, "{{match:REGEXP}}", inside a
// string of a call marker's JSON arguments: when the fake makes that call
// it replaces the placeholder by the first match of the Go regexp REGEXP
// (its first group, when it has groups) in the tool results since the
// marked message, the newest first. So a marker can pass on an id an
// earlier call returned: [call:task_end {"task_id":"{{match:task-[0-9a-f-]+}}"}].
// The arguments of a call with a placeholder are re-encoded, their keys in
// sorted order. REGEXP cannot contain "}}".
const MatchPlaceholder = "{{match:"

// toolCall is the one tool call an answer may carry.
type toolCall struct {
	id, name, arguments string
}

// toolAnswer answers a request that offers tools and has a user message
// with call markers (the last such message counts) the way a model making
// one tool call at a time would, and reports false for any other request:
//
//   - with n tool messages after that user message (n results are in), it
//     answers one call (id "call_00_<completion id>") to the tool the
//     marker n+1 of that message names, with the marker's JSON object as
//     the arguments (placeholders filled, see MatchPlaceholder),
//     finish_reason "tool_calls";
//   - once every marker has its result (one marker: the first result), it
//     answers the text "TOOL-RESULT: <the last tool message>";
//   - a marker that does not parse, arguments that are not a JSON object,
//     a placeholder that matches nothing or a tool the request does not
//     offer get a text saying so.
//
// With thinking on (the default) each answer has a line of reasoning, and
// max_tokens cuts a text answer as it cuts any other.
func toolAnswer(req *chatRequest, msgs []Message, id string) (answer, bool) {
	a, ok := followMarker(req, msgs, id)
	if !ok {
		return a, false
	}
	if req.Thinking.get() != "disabled" {
		a.reasoning = "fake-deepseek thinking: following the " + CallMarker + "...] marker in the prompt."
	}
	if a.call != nil {
		return a, true
	}
	return a.limit(cmp.Or(req.MaxTokens, req.MaxCompletionTokens)), true
}

// followMarker is toolAnswer without thinking and max_tokens.
func followMarker(req *chatRequest, msgs []Message, id string) (answer, bool) {
	if len(req.Tools) == 0 {
		return answer{}, false
	}
	at := last(msgs, func(m Message) bool { return m.Role == "user" && strings.Contains(m.Content, CallMarker) })
	if at < 0 {
		return answer{}, false
	}
	var results []string // the tool results since the marked message, oldest first
	for _, m := range msgs[at+1:] {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	name, args, more, err := nthCall(msgs[at].Content, len(results))
	if len(results) > 0 && (!more || err != nil && len(results) == 1) {
		// Every marker has its result (a marker after the first that does
		// not parse was no marker before several were read).
		return answer{content: "TOOL-RESULT: " + results[len(results)-1], finish: "stop"}, true
	}
	if err == nil {
		args, err = fillPlaceholders(name, args, results)
	}
	if err == nil && !offers(req.Tools, name) {
		err = fmt.Errorf("names tool %q, which the request does not offer (it offers %s)", name, toolNames(req.Tools))
	}
	if err != nil {
		return answer{content: "fake-deepseek: the " + CallMarker + "NAME {json args}] marker " + err.Error(), finish: "stop"}, true
	}
	return answer{finish: "tool_calls", call: &toolCall{id: "call_00_" + id, name: name, arguments: args}}, true
}

// last is the index of the last message f accepts, or -1.
func last(msgs []Message, f func(Message) bool) int {
	for i, m := range slices.Backward(msgs) {
		if f(m) {
			return i
		}
	}
	return -1
}

// nthCall reads call marker n (from 0) of a text; more is false when the
// text has no such marker (err is then nil). A marker before it that does
// not parse is the error: the markers after it cannot be told apart.
func nthCall(text string, n int) (name, args string, more bool, err error) {
	rest := text
	for i := 0; ; i++ {
		_, after, ok := strings.Cut(rest, CallMarker)
		if !ok {
			return "", "", false, nil
		}
		if name, args, rest, err = parseCall(after); err != nil || i == n {
			return name, args, true, err
		}
	}
}

// parseCall reads a call marker after its CallMarker: the tool's name, then
// one space and a JSON object (compacted), then "]"; rest is the text after
// the "]".
func parseCall(text string) (name, args, rest string, err error) {
	name, rest, ok := strings.Cut(text, " ")
	if !ok || name == "" || strings.ContainsAny(name, "]{\n") {
		return "", "", "", fmt.Errorf("has no tool name followed by a space")
	}
	dec := json.NewDecoder(strings.NewReader(rest))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil || !bytes.HasPrefix(raw, []byte("{")) {
		return "", "", "", fmt.Errorf("of tool %q has no JSON object for arguments (%v)", name, cmpErr(err, "not an object"))
	}
	after, ok := strings.CutPrefix(rest[dec.InputOffset():], "]")
	if !ok {
		return "", "", "", fmt.Errorf("of tool %q does not end with ] right after the arguments", name)
	}
	var b bytes.Buffer
	_ = json.Compact(&b, raw)
	return name, b.String(), after, nil
}

// fillPlaceholders replaces each MatchPlaceholder in the strings of a
// call's arguments (see there); arguments without one come back as given.
func fillPlaceholders(name, args string, results []string) (string, error) {
	if !strings.Contains(args, MatchPlaceholder) {
		return args, nil
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("of tool %q has arguments that do not decode (%v)", name, err)
	}
	var bad error
	var fill func(v any) any
	fill = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = fill(e)
			}
		case []any:
			for i, e := range x {
				x[i] = fill(e)
			}
		case string:
			out, err := fillString(x, results)
			if err != nil && bad == nil {
				bad = fmt.Errorf("of tool %q: %w", name, err)
			}
			return out
		}
		return v
	}
	v = fill(v)
	if bad != nil {
		return "", bad
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("of tool %q: arguments do not encode (%v)", name, err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// fillString replaces the placeholders of one string.
func fillString(s string, results []string) (string, error) {
	var out strings.Builder
	for {
		before, after, ok := strings.Cut(s, MatchPlaceholder)
		if !ok {
			out.WriteString(s)
			return out.String(), nil
		}
		expr, tail, ok := strings.Cut(after, "}}")
		if !ok {
			return "", fmt.Errorf("%s%s has no }}", MatchPlaceholder, after)
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return "", fmt.Errorf("%s%s}}: %v", MatchPlaceholder, expr, err)
		}
		found := false
		for _, r := range slices.Backward(results) {
			if m := re.FindStringSubmatch(r); m != nil {
				out.WriteString(before + m[min(1, len(m)-1)])
				found = true
				break
			}
		}
		if !found {
			return "", fmt.Errorf("%s%s}} matches none of the %d tool results since the marked message", MatchPlaceholder, expr, len(results))
		}
		s = tail
	}
}

func cmpErr(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}

func offers(tools []wireTool, name string) bool {
	return slices.ContainsFunc(tools, func(t wireTool) bool { return t.Function.Name == name })
}

func toolNames(tools []wireTool) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Function.Name
	}
	return strings.Join(names, ", ")
}

// wire is the call as a non-streaming answer carries it.
func (c *toolCall) wire() wireToolCall {
	return wireToolCall{ID: c.id, Type: "function", Function: wireFunction{Name: c.name, Arguments: c.arguments}}
}

// chunks is the call as a stream carries it, as DeepSeek streams one: a
// first chunk with the id, type and name and no arguments yet, then the
// arguments in pieces. A nil call has none.
func (c *toolCall) chunks() []wireToolCall {
	if c == nil {
		return nil
	}
	head := c.wire()
	head.Function.Arguments = ""
	out := []wireToolCall{head}
	for _, p := range pieces(c.arguments) {
		out = append(out, wireToolCall{Function: wireFunction{Arguments: p}})
	}
	return out
}
