package fakeds_test

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/llm/fakeds"
)

// ask sends one JSON-mode call and decodes the reply strictly into out.
func ask(t *testing.T, ts *httptest.Server, system, user string, out any) {
	t.Helper()
	resp, err := client(ts, "/v1", "sk-any").CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{
		Model: "deepseek-v4-flash", MaxTokens: 4000,
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
		Messages:       []openai.ChatCompletionMessage{{Role: "system", Content: system}, {Role: "user", Content: user}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(resp.Choices[0].Message.Content))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("reply %q: %v", resp.Choices[0].Message.Content, err)
	}
}

func fakeMem(id int64, kind memory.Kind, text string) memory.Memory {
	return memory.Memory{ID: id, Workspace: "/home/dev/proj", Kind: kind, Text: text, Origin: memory.OriginTool,
		RecordedAt: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
}

// The default consolidate_merge reply keeps each cluster's longest member:
// planted near-duplicates merge, and a cluster whose shorter member has an
// extra number is answered lossily, so that the fidelity check rejects it.
func TestConsolidateMergeDefaultReply(t *testing.T) {
	_, ts := start(t, fakeds.Options{})
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ms := map[int64]memory.Memory{}
	for _, m := range []memory.Memory{
		fakeMem(17, memory.Fact, "use pnpm not npm in this repo"),
		fakeMem(23, memory.Fact, "This repo uses pnpm, not npm."),
		fakeMem(30, memory.Fact, "postgres listens on port 5433"),
		fakeMem(41, memory.Fact, "postgres listens on its usual port in the dev setup"),
		fakeMem(52, memory.Lesson, "same length A"),
		fakeMem(58, memory.Lesson, "same length B"),
	} {
		ms[m.ID] = m
	}
	chunk := []consolidate.Cluster{
		{Kind: memory.Fact, IDs: []int64{17, 23}}, {Kind: memory.Fact, IDs: []int64{30, 41}}, {Kind: memory.Lesson, IDs: []int64{52, 58}},
	}
	var out consolidate.MergeOutput
	ask(t, ts, consolidate.MergePrompt, consolidate.MergeInput(chunk, ms), &out)
	if err := out.Validate(len(chunk)); err != nil {
		t.Fatalf("reply %+v: %v", out, err)
	}
	want := []consolidate.Merge{
		{Cluster: 1, Text: "use pnpm not npm in this repo"}, // a tie: 29 runes each
		{Cluster: 2, Text: "postgres listens on its usual port in the dev setup"},
		{Cluster: 3, Text: "same length A"},
	}
	if !reflect.DeepEqual(out.Merges, want) {
		t.Fatalf("merges %+v, want %+v", out.Merges, want)
	}
	c := consolidate.PlanMerges(out, chunk, ms, consolidate.Source{Workspace: "/home/dev/proj", JobID: 1}, now)
	if len(c.Merged) != 2 || len(c.Rejected) != 1 || c.Rejected[0].Cluster.IDs[0] != 30 ||
		!reflect.DeepEqual(c.Rejected[0].Missing[:1], []string{"5433"}) {
		t.Errorf("plan %+v: want clusters 1 and 3 merged, 2 rejected for losing 5433", c)
	}

	var empty consolidate.MergeOutput
	ask(t, ts, consolidate.MergePrompt, "", &empty)
	if len(empty.Merges) != 0 || empty.Validate(0) != nil {
		t.Errorf("reply to no clusters: %+v", empty)
	}
}

// The default consolidate_derive reply fits learn/consolidate's schema and
// derives from the first memory lines of the input.
func TestConsolidateDeriveDefaultReply(t *testing.T) {
	_, ts := start(t, fakeds.Options{})
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	long := strings.Repeat("a very long lesson text ", 15)
	ms := []memory.Memory{
		fakeMem(1, memory.Preference, "answer in English"),
		fakeMem(2, memory.Lesson, long),
		fakeMem(3, memory.Fact, "the repo uses pnpm"),
		fakeMem(4, memory.Fact, "postgres listens on port 5433 in dev"),
	}
	for _, user := range []string{consolidate.DeriveInput(ms, now, 6000), consolidate.DeriveInput(nil, now, 6000)} {
		var out consolidate.DeriveOutput
		ask(t, ts, consolidate.DerivePrompt, user, &out)
		if err := out.Validate(); err != nil {
			t.Fatalf("reply %+v: %v", out, err)
		}
		if len(out.Principles) != 3 || len(out.Hypotheses) != 1 || len(out.Prefetch) != 3 {
			t.Fatalf("reply %+v", out)
		}
		if user == consolidate.DeriveInput(nil, now, 6000) {
			continue
		}
		if out.Principles[0] != "Principle: answer in English" || out.Prefetch[2] != "Prefetch: the repo uses pnpm" ||
			out.Principles[1] != "Principle: "+strings.TrimSpace(long[:80]) {
			t.Errorf("reply %+v does not derive from the first memory lines", out)
		}
	}
}
