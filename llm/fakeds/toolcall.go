package fakeds

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// CallMarker starts a call marker, "[call:NAME {json args}]", in a user
// message. It lets a test make an agent that talks to the fake call a tool:
// a request that offers tools and has a user message with a call marker is
// answered by toolAnswer, not by the script or the responders, so agent
// tests (DSH's end-to-end run) need no second fake.
const CallMarker = "[call:"

// toolCall is the one tool call an answer may carry.
type toolCall struct {
	id, name, arguments string
}

// toolAnswer answers a request that offers tools and has a user message
// with a call marker (the last such message counts) the way a model making
// one tool call would, and reports false for any other request:
//
//   - once a tool message follows that user message (the call's result is
//     in), it answers the text "TOOL-RESULT: <the last tool message>";
//   - else it answers one call (id "call_00_<completion id>") to the tool
//     the first marker of that message names, with the marker's JSON
//     object as the arguments, finish_reason "tool_calls";
//   - a marker that does not parse, arguments that are not a JSON object
//     or a tool the request does not offer get a text saying so.
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
	if i := last(msgs[at+1:], func(m Message) bool { return m.Role == "tool" }); i >= 0 {
		return answer{content: "TOOL-RESULT: " + msgs[at+1+i].Content, finish: "stop"}, true
	}
	name, args, err := parseCall(msgs[at].Content)
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

// parseCall reads the first call marker of a text: the tool's name, then
// one space and a JSON object (compacted), then "]".
func parseCall(text string) (name, args string, err error) {
	_, rest, _ := strings.Cut(text, CallMarker)
	name, rest, ok := strings.Cut(rest, " ")
	if !ok || name == "" || strings.ContainsAny(name, "]{\n") {
		return "", "", fmt.Errorf("has no tool name followed by a space")
	}
	dec := json.NewDecoder(strings.NewReader(rest))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil || !bytes.HasPrefix(raw, []byte("{")) {
		return "", "", fmt.Errorf("of tool %q has no JSON object for arguments (%v)", name, cmpErr(err, "not an object"))
	}
	if !strings.HasPrefix(rest[dec.InputOffset():], "]") {
		return "", "", fmt.Errorf("of tool %q does not end with ] right after the arguments", name)
	}
	var b bytes.Buffer
	_ = json.Compact(&b, raw)
	return name, b.String(), nil
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
