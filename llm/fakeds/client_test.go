package fakeds_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mullhq/mull/llm/fakeds"
)

func TestGoOpenAINonStreaming(t *testing.T) {
	for _, suffix := range []string{"/v1", ""} {
		t.Run("base"+suffix, func(t *testing.T) {
			fake, ts := start(t, fakeds.Options{})
			resp, err := client(ts, suffix, "sk-any").CreateChatCompletion(t.Context(), probeRequest("hello there"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Object != "chat.completion" || resp.Model != "deepseek-v4-flash" || resp.Created != fixedNow.Unix() {
				t.Fatalf("head %+v", resp)
			}
			c := resp.Choices[0]
			if c.Message.Role != "assistant" || c.FinishReason != openai.FinishReasonStop {
				t.Fatalf("choice %+v", c)
			}
			var got struct {
				OK   bool   `json:"ok"`
				Echo string `json:"echo"`
			}
			if err := json.Unmarshal([]byte(c.Message.Content), &got); err != nil || !got.OK || got.Echo != "hello there" {
				t.Fatalf("content %q (%v): want the llm_probe schema echoing the user", c.Message.Content, err)
			}
			reqs := fake.Requests()
			if len(reqs) != 1 || reqs[0].Path != suffix+"/chat/completions" || reqs[0].ResponseFormat != "json_object" {
				t.Fatalf("recorded %+v", reqs)
			}
			u := *reqs[0].Usage
			checkUsage(t, u)
			if resp.Usage.PromptTokens != u.PromptTokens || resp.Usage.CompletionTokens != u.CompletionTokens {
				t.Fatalf("go-openai usage %+v, recorded %+v", resp.Usage, u)
			}
		})
	}
}

func TestGoOpenAIStreaming(t *testing.T) {
	for _, suffix := range []string{"/v1", ""} {
		t.Run("base"+suffix, func(t *testing.T) {
			fake, ts := start(t, fakeds.Options{})
			req := probeRequest(strings.Repeat("stream me ", 20))
			req.Stream = true
			content, reasoning, finish, usage := readStream(t, client(ts, suffix, ""), req)
			if !json.Valid([]byte(content)) || !strings.Contains(content, "stream me") {
				t.Fatalf("streamed content %q: want the probe JSON", content)
			}
			if reasoning == "" || finish != openai.FinishReasonStop {
				t.Fatalf("reasoning %q finish %q: want reasoning (thinking is on by default) and stop", reasoning, finish)
			}
			rec := fake.Requests()[0]
			if !rec.Stream || usage == nil || usage.PromptTokens != rec.Usage.PromptTokens || usage.CompletionTokens != rec.Usage.CompletionTokens {
				t.Fatalf("stream usage %+v, recorded %+v", usage, rec)
			}
		})
	}
}

// readStream reads a whole stream through go-openai.
func readStream(t *testing.T, c *openai.Client, req openai.ChatCompletionRequest) (content, reasoning string, finish openai.FinishReason, usage *openai.Usage) {
	t.Helper()
	stream, err := c.CreateChatCompletionStream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var b, r strings.Builder
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), r.String(), finish, usage
		}
		if err != nil {
			t.Fatal(err)
		}
		if chunk.Object != "chat.completion.chunk" {
			t.Fatalf("chunk object %q", chunk.Object)
		}
		for _, ch := range chunk.Choices {
			b.WriteString(ch.Delta.Content)
			r.WriteString(ch.Delta.ReasoningContent)
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
	}
}

// DeepSeek writes empty lines before a held non-streaming body; go-openai
// decodes the body with a json.Decoder, which skips leading whitespace.
func TestGoOpenAIToleratesKeepAliveLines(t *testing.T) {
	_, ts := start(t, fakeds.Options{
		KeepAliveEvery: time.Millisecond,
		Script:         &fakeds.Script{Rules: []fakeds.Rule{{Fault: fakeds.FaultSlow, Delay: 3 * time.Millisecond}}},
	})
	resp, body := post(t, ts, "/chat/completions", probeBody("slow", nil), nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "\n\n\n{") {
		t.Fatalf("status %d body %q: want 3 keep-alive lines, then the JSON", resp.StatusCode, body)
	}
	out, err := client(ts, "/v1", "").CreateChatCompletion(t.Context(), probeRequest("slow"))
	if err != nil {
		t.Fatalf("go-openai on a body with leading newlines: %v", err)
	}
	if !strings.Contains(out.Choices[0].Message.Content, `"echo":"slow"`) {
		t.Fatalf("content %q", out.Choices[0].Message.Content)
	}
}

func TestGoOpenAIStreamToleratesKeepAliveComments(t *testing.T) {
	_, ts := start(t, fakeds.Options{
		Script: &fakeds.Script{Rules: []fakeds.Rule{{Fault: fakeds.FaultSlow, Delay: 5 * time.Millisecond}}},
	})
	resp, body := post(t, ts, "/v1/chat/completions", probeBody("slow", map[string]any{"stream": true}), nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" ||
		!strings.HasPrefix(body, strings.Repeat(": keep-alive\n\n", 5)+"data: {") || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("status %d body %q: want 5 keep-alive comments, chunks, [DONE]", resp.StatusCode, body)
	}
	req := probeRequest("slow")
	req.Stream = true
	content, _, finish, _ := readStream(t, client(ts, "/v1", ""), req)
	if !strings.Contains(content, `"echo":"slow"`) || finish != openai.FinishReasonStop {
		t.Fatalf("content %q finish %q", content, finish)
	}
}

func TestGoOpenAIListsModels(t *testing.T) {
	_, ts := start(t, fakeds.Options{Models: []string{"deepseek-v4-flash"}})
	list, err := client(ts, "/v1", "").ListModels(t.Context())
	if err != nil || len(list.Models) != 1 || list.Models[0].ID != "deepseek-v4-flash" {
		t.Fatalf("models %+v, %v", list, err)
	}
}
