package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// /llm/{id} shows the model's answer the call kept (llm.keep_prompts),
// escaped and with its credentials redacted, and says why there is none
// when llm.keep_prompts is 0.
func TestPanelLLMCallShowsTheAnswer(t *testing.T) {
	const tok = "ghp_ANSWERQQQQQQQQQQQQQQQQQQQQQQQQ"
	for _, keep := range []string{"7d", "0"} {
		t.Run("keep_prompts="+keep, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, s *store.Store) {
				ctx := context.Background()
				e := newEnv(t, s, envOpts{Edit: func(c *config.Config) { c.LLM.KeepPrompts = keep }})
				if err := e.Fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{{Kind: "retro_session", Response: &fakeds.Response{
					Content: "use <b>" + tok + "</b> to push", ReasoningContent: "thinking about the push"}}}}); err != nil {
					t.Fatal(err)
				}
				if _, err := e.LLM.Complete(ctx, llm.Call{Kind: "retro_session", Messages: []llm.Message{llm.System("mull-prompt: retro"), llm.User("excerpt")}}); err != nil {
					t.Fatal(err)
				}
				calls, err := s.ListLLMCalls(ctx, store.LLMCallFilter{})
				if err != nil || len(calls) != 1 {
					t.Fatalf("calls %+v, %v: want one", calls, err)
				}
				code, body := e.get(e.httpClient(true), "/llm/"+calls[0].ID)
				if code != http.StatusOK || strings.Contains(body, "ANSWERQQ") {
					t.Fatalf("/llm/%s: %d, or the raw credential shows\n%s", calls[0].ID, code, body)
				}
				if keep == "0" {
					wantIn(t, "no answer", body, "No answer kept: llm.keep_prompts is 0")
					return
				}
				wantIn(t, "answer", body, "<pre>use &lt;b&gt;[redacted:ghp]&lt;/b&gt; to push</pre>", "<pre>thinking about the push</pre>")
			})
		})
	}
}
