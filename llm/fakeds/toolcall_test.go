package fakeds_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mullhq/mull/llm/fakeds"
)

// toolBody is a raw request offering the named tools (none: no "tools").
func toolBody(msgs []map[string]any, tools ...string) map[string]any {
	body := map[string]any{"model": "deepseek-v4-flash", "messages": msgs, "thinking": map[string]any{"type": "disabled"}}
	if len(tools) > 0 {
		var ts []map[string]any
		for _, name := range tools {
			ts = append(ts, map[string]any{"type": "function", "function": map[string]any{
				"name": name, "parameters": map[string]any{"type": "object"},
			}})
		}
		body["tools"] = ts
	}
	return body
}

func msg(role, content string) map[string]any {
	return map[string]any{"role": role, "content": content}
}

// called is the assistant message of a tool call, as a client sends it back.
var called = map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{
	"id": "call_00_x", "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"ls"}`},
}}}

func toolResult(text string) map[string]any {
	return map[string]any{"role": "tool", "tool_call_id": "call_00_x", "content": text}
}

// wireToolAnswer is the part of a non-streaming answer these tests read.
type wireToolAnswer struct {
	Choices []struct {
		Message struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage fakeds.Usage `json:"usage"`
}

func TestToolCallMarker(t *testing.T) {
	const plain = "This is fake-deepseek: no mull prompt type was given, so here is a plain reply."
	ls := `Run it. [call:bash {"command": "ls /tmp"}]`
	two := `Do it. [call:task_start {"goal":"g","expected_result":"e"}] then [call:bash {"command":"ls /x"}]`
	three := two + ` and [call:task_end {"task_id":"{{match:task-[0-9a-f]+}}","status":"failed"}]`
	for _, tc := range []struct {
		name  string
		msgs  []map[string]any
		tools []string
		// call is "NAME ARGS" when a tool call is wanted; else content.
		call, content string
	}{
		{"marker calls the tool", []map[string]any{msg("system", "be brief"), msg("user", ls)},
			[]string{"remember", "bash"}, `bash {"command":"ls /tmp"}`, ""},
		{"first marker of the last marked message", []map[string]any{msg("user", `[call:remember {"text":"old"}]`),
			msg("user", `[call:remember {"text":"a }] b","tags":{"k":[1]}}] then [call:bash {}]`)},
			[]string{"remember", "bash"}, `remember {"text":"a }] b","tags":{"k":[1]}}`, ""},
		{"a later unmarked user message keeps the marked one", []map[string]any{msg("user", ls), msg("user", "<reminder>")},
			[]string{"bash"}, `bash {"command":"ls /tmp"}`, ""},
		{"the result answers TOOL-RESULT", []map[string]any{msg("user", ls), called, toolResult("a.txt\nb.txt")},
			[]string{"bash"}, "", "TOOL-RESULT: a.txt\nb.txt"},
		{"the last result after the marker", []map[string]any{msg("user", ls), called, toolResult("one"), called, toolResult("two")},
			[]string{"bash"}, "", "TOOL-RESULT: two"},
		{"a result before the marker is an older call's", []map[string]any{msg("user", ls), called, toolResult("old"), msg("user", ls)},
			[]string{"bash"}, `bash {"command":"ls /tmp"}`, ""},
		{"markers are called in order, one per result", []map[string]any{msg("user", two), called, toolResult("Task task-9f0 started.")},
			[]string{"task_start", "bash", "task_end"}, `bash {"command":"ls /x"}`, ""},
		{"a placeholder takes the newest result", []map[string]any{msg("user", three), called, toolResult("Task task-111 started."),
			called, toolResult("task-abc, then task-222")},
			[]string{"task_start", "bash", "task_end"}, `task_end {"status":"failed","task_id":"task-abc"}`, ""},
		{"a placeholder skips a newer result without a match", []map[string]any{msg("user", three), called, toolResult("Task task-9f0 started."),
			called, toolResult("ls: task-zzz: exit code 2")},
			[]string{"task_start", "bash", "task_end"}, `task_end {"status":"failed","task_id":"task-9f0"}`, ""},
		{"a placeholder's group", []map[string]any{msg("user", `[call:bash {}] [call:lessons_lookup {"lesson_id":"{{match:lesson (\\d+) <}}"}]`),
			called, toolResult("see lesson 42 <here>")},
			[]string{"bash", "lessons_lookup"}, `lessons_lookup {"lesson_id":"42"}`, ""},
		{"every marker has its result", []map[string]any{msg("user", two), called, toolResult("one"), called, toolResult("two")},
			[]string{"task_start", "bash"}, "", "TOOL-RESULT: two"},
		{"a placeholder that matches nothing", []map[string]any{msg("user", three), called, toolResult("x"), called, toolResult("y")},
			[]string{"task_start", "bash", "task_end"}, "", `of tool "task_end": {{match:task-[0-9a-f]+}} matches none of the 2 tool results since the marked message`},
		{"a placeholder with a bad regexp", []map[string]any{msg("user", `[call:bash {"command":"{{match:(}}"}]`)},
			[]string{"bash"}, "", `of tool "bash": {{match:(}}: error parsing regexp`},
		{"a tool not offered", []map[string]any{msg("user", ls)},
			[]string{"remember"}, "", `names tool "bash", which the request does not offer (it offers remember)`},
		{"arguments not JSON", []map[string]any{msg("user", `[call:bash {command: ls}]`)},
			[]string{"bash"}, "", `of tool "bash" has no JSON object for arguments`},
		{"arguments not an object", []map[string]any{msg("user", `[call:bash ["ls"]]`)},
			[]string{"bash"}, "", `of tool "bash" has no JSON object for arguments`},
		{"no ] after the arguments", []map[string]any{msg("user", `[call:bash {"command":"ls"} now]`)},
			[]string{"bash"}, "", `does not end with ]`},
		{"no name", []map[string]any{msg("user", `[call:{"command":"ls"}]`)},
			[]string{"bash"}, "", `has no tool name followed by a space`},
		{"no tools offered: the default reply", []map[string]any{msg("user", ls)}, nil, "", plain},
		{"no marker: the default reply", []map[string]any{msg("user", "Run ls.")}, []string{"bash"}, "", plain},
		{"a result without a marker: the default reply", []map[string]any{msg("user", "Run ls."), called, toolResult("x")},
			[]string{"bash"}, "", plain},
		{"a marker in a system message is no marker", []map[string]any{msg("system", ls), msg("user", "go")},
			[]string{"bash"}, "", plain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, ts := start(t, fakeds.Options{})
			resp, body := post(t, ts, "/v1/chat/completions", toolBody(tc.msgs, tc.tools...), nil)
			var got wireToolAnswer
			if err := json.Unmarshal([]byte(body), &got); err != nil || resp.StatusCode != 200 || len(got.Choices) != 1 {
				t.Fatalf("status %d body %s (%v)", resp.StatusCode, body, err)
			}
			c := got.Choices[0]
			if tc.call != "" {
				if len(c.Message.ToolCalls) != 1 || c.FinishReason != "tool_calls" || c.Message.Content != "" {
					t.Fatalf("answer %s: want one tool call, finish_reason tool_calls", body)
				}
				call := c.Message.ToolCalls[0]
				if call.ID != "call_00_fake-1" || call.Type != "function" || call.Function.Name+" "+call.Function.Arguments != tc.call {
					t.Fatalf("call %+v: want id call_00_fake-1, %s", call, tc.call)
				}
			} else if len(c.Message.ToolCalls) != 0 || c.FinishReason != "stop" || !strings.Contains(c.Message.Content, tc.content) {
				t.Fatalf("answer %s: want text with %q, finish_reason stop", body, tc.content)
			}
			checkUsage(t, got.Usage)
			if rec := fake.Requests()[0]; rec.Usage == nil || *rec.Usage != got.Usage || rec.Rule != -1 {
				t.Fatalf("recorded %+v, answered usage %+v", rec, got.Usage)
			}
		})
	}
}

// A marker request is answered before the script, which keeps answering
// every other request.
func TestToolCallMarkerComesBeforeTheScript(t *testing.T) {
	fake, ts := start(t, fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{
		{Marker: "zq1", Response: &fakeds.Response{Content: "MEMORY-SEEN"}},
	}}})
	system := msg("system", "memory: zq1")
	_, body := post(t, ts, "/chat/completions", toolBody([]map[string]any{system, msg("user", `[call:bash {}]`)}, "bash"), nil)
	if !strings.Contains(body, `"finish_reason":"tool_calls"`) {
		t.Fatalf("marker request: %s", body)
	}
	_, body = post(t, ts, "/chat/completions", toolBody([]map[string]any{system, msg("user", "hi")}, "bash"), nil)
	if !strings.Contains(body, `"content":"MEMORY-SEEN"`) {
		t.Fatalf("request without a marker: %s, want the rule's answer", body)
	}
	if reqs := fake.Requests(); reqs[0].Rule != -1 || reqs[1].Rule != 0 {
		t.Fatalf("rules recorded %d, %d; want -1, 0", reqs[0].Rule, reqs[1].Rule)
	}
}

// toolRequest asks go-openai's way for a remember call.
func toolRequest(stream bool, msgs ...openai.ChatCompletionMessage) openai.ChatCompletionRequest {
	tool := func(name string) openai.Tool {
		return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: name, Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		}}
	}
	return openai.ChatCompletionRequest{
		Model: "deepseek-v4-flash", Stream: stream, Tools: []openai.Tool{tool("bash"), tool("remember")},
		Messages: append([]openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleUser, Content: `Keep this. [call:remember {"text":"use pnpm","kind":"fact"}]`},
		}, msgs...),
	}
}

func TestGoOpenAIToolCall(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "non-streaming", true: "streaming"}[stream], func(t *testing.T) {
			fake, ts := start(t, fakeds.Options{})
			c := client(ts, "/v1", "sk-any")
			msg, finish, usage := chatTurn(t, c, toolRequest(stream))
			if finish != openai.FinishReasonToolCalls || len(msg.ToolCalls) != 1 || msg.ReasoningContent == "" {
				t.Fatalf("finish %q message %+v: want one tool call with reasoning", finish, msg)
			}
			call := msg.ToolCalls[0]
			var args struct{ Text, Kind string }
			if call.ID != "call_00_fake-1" || call.Type != openai.ToolTypeFunction || call.Function.Name != "remember" ||
				json.Unmarshal([]byte(call.Function.Arguments), &args) != nil || args != (struct{ Text, Kind string }{"use pnpm", "fact"}) {
				t.Fatalf("call %+v", call)
			}
			if rec := fake.Requests()[0]; usage.CompletionTokens != rec.Usage.CompletionTokens || usage.PromptTokens != rec.Usage.PromptTokens {
				t.Fatalf("usage %+v, recorded %+v", usage, rec.Usage)
			}

			msg, finish, _ = chatTurn(t, c, toolRequest(stream, msg, openai.ChatCompletionMessage{
				Role: openai.ChatMessageRoleTool, ToolCallID: call.ID, Content: "Saved to mull memory (id 7).",
			}))
			if finish != openai.FinishReasonStop || msg.Content != "TOOL-RESULT: Saved to mull memory (id 7)." || len(msg.ToolCalls) != 0 {
				t.Fatalf("after the result: finish %q message %+v", finish, msg)
			}
		})
	}
}

// chatTurn sends one request and returns the assistant message, gathering
// a stream's deltas the way an agent does (tool call arguments appended by
// index).
func chatTurn(t *testing.T, c *openai.Client, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, openai.FinishReason, openai.Usage) {
	t.Helper()
	if !req.Stream {
		resp, err := c.CreateChatCompletion(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].Message, resp.Choices[0].FinishReason, resp.Usage
	}
	stream, err := c.CreateChatCompletionStream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	var finish openai.FinishReason
	var usage openai.Usage
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return msg, finish, usage
		}
		if err != nil {
			t.Fatal(err)
		}
		if chunk.Usage != nil {
			usage = *chunk.Usage
		}
		for _, ch := range chunk.Choices {
			msg.Content += ch.Delta.Content
			msg.ReasoningContent += ch.Delta.ReasoningContent
			finish = cmpOrFinish(ch.FinishReason, finish)
			for _, d := range ch.Delta.ToolCalls {
				if d.Index == nil || *d.Index > len(msg.ToolCalls) {
					t.Fatalf("tool call delta %+v: want an index in order", d)
				}
				if *d.Index == len(msg.ToolCalls) {
					msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: d.ID, Type: d.Type, Function: openai.FunctionCall{Name: d.Function.Name}})
				}
				msg.ToolCalls[*d.Index].Function.Arguments += d.Function.Arguments
			}
		}
	}
}

func cmpOrFinish(f, def openai.FinishReason) openai.FinishReason {
	if f != "" {
		return f
	}
	return def
}
