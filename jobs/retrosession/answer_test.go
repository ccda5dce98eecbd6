package retrosession_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// retroCall is the record of the one retro_session call made.
func retroCall(t *testing.T, s *store.Store) store.LLMCall {
	t.Helper()
	ctx := context.Background()
	calls, err := s.ListLLMCalls(ctx, store.LLMCallFilter{Kind: "retro_session"})
	if err != nil || len(calls) != 1 {
		t.Fatalf("retro calls %+v, %v: want one", calls, err)
	}
	c, err := s.GetLLMCall(ctx, calls[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A retro's call record keeps the model's answer with its prompt
// (llm.keep_prompts): content and reasoning, each credential in them
// redacted as the prompt's are, and pruned with the prompt.
func TestRetroCallKeepsItsAnswer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		tok, reasonTok := secret("ghp", "answer"), secret("sk", "reasoning")
		out := retro.Output{Lessons: []retro.Entry{{Text: "push failed -> token " + tok + " expired -> renew the deploy token"}},
			Handoff: []string{"Renewed the token.", "Tests pass.", "Next: tag."}}
		sc := &fakeds.Script{Rules: []fakeds.Rule{{Kind: "retro_session", Response: &fakeds.Response{
			Content: mustJSON(out), ReasoningContent: "the key " + reasonTok + " leaked in the log", FinishReason: "stop"}}}}
		e := start(t, s, sc)
		session(t, s, "session-1")
		e.run(t, "session-1")

		c := retroCall(t, s)
		if len(c.Messages) == 0 || c.Response == nil {
			t.Fatalf("call %+v: want its messages and its answer kept", c)
		}
		want := strings.ReplaceAll(mustJSON(out), tok, "[redacted:ghp]")
		if c.Response.Content != want || c.Response.Reasoning != "the key [redacted:sk] leaked in the log" {
			t.Fatalf("kept answer %+v;\nwant content %s and the reasoning, both redacted", c.Response, want)
		}
		if dump := storetest.Dump(t, s); strings.Contains(dump, "ANSWER") || strings.Contains(dump, "REASONING") {
			t.Fatal("a raw secret of the answer is stored")
		}
		d := c.Detail()
		if d.Response == nil || d.Response.Content != want {
			t.Fatalf("detail %+v: want the answer", d)
		}

		n, err := s.PruneLLMPrompts(ctx, time.Now().Add(time.Hour))
		if err != nil || n != 1 {
			t.Fatalf("pruned %d, %v; want the one call", n, err)
		}
		if c := retroCall(t, s); c.Messages != nil || c.Response != nil || c.Outcome != "ok" {
			t.Fatalf("after the prune: %+v; want no messages and no answer, the rest kept", c)
		}
	})
}

// keep_prompts 0 keeps no answer, as it keeps no prompt.
func TestRetroCallKeepsNoAnswerWithoutKeepPrompts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := startRetros(t, s, retros{llm: llmtest.Options{Fake: fakeds.Options{Script: script(mustJSON(answer), "stop")},
			Edit: func(c *config.Config) { c.LLM.KeepPrompts = "0" }}, jobs: fast})
		session(t, s, "session-1")
		e.run(t, "session-1")
		if c := retroCall(t, s); c.Messages != nil || c.Response != nil || c.Outcome != "ok" {
			t.Fatalf("call %+v: want no messages and no answer kept", c)
		}
	})
}
