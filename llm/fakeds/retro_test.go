package fakeds_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm/fakeds"
)

// The default retro_session reply fits learn/retro's schema and names the
// excerpt's first error.
func TestRetroSessionDefaultReply(t *testing.T) {
	_, ts := start(t, fakeds.Options{})
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	exit := 1
	excerpt := retro.BuildExcerpt(retro.Input{
		ToolFailures: []retro.ToolFailure{{Time: t0, Tool: "bash", Command: "go test ./...", ExitCode: &exit, Output: "no required module provides package -> x"}},
		Transcript:   []retro.Message{{Time: t0, Role: "user", Text: "run the tests"}},
	}, retro.Caps{})
	for _, user := range []string{excerpt, "nothing failed"} {
		resp, err := client(ts, "/v1", "sk-any").CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{
			Model: "deepseek-v4-flash", MaxTokens: 4000,
			ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
			Messages:       []openai.ChatCompletionMessage{{Role: "system", Content: retro.Prompt}, {Role: "user", Content: user}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var out retro.Output
		dec := json.NewDecoder(strings.NewReader(resp.Choices[0].Message.Content))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out); err != nil {
			t.Fatalf("reply %q: %v", resp.Choices[0].Message.Content, err)
		}
		if err := out.Validate(); err != nil {
			t.Fatalf("reply %q: %v", resp.Choices[0].Message.Content, err)
		}
		if len(out.Lessons) != 1 || len(out.Facts) != 1 || len(out.Handoff) != 3 {
			t.Fatalf("reply %+v", out)
		}
		if user == excerpt && !strings.Contains(out.Lessons[0].Text, "bash exit 1: go test ./...") {
			t.Fatalf("lesson %q does not name the first failure", out.Lessons[0].Text)
		}
	}
}
