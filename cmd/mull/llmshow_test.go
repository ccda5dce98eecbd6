package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mullhq/mull/store"
)

// `mull llm calls show ID` prints a call with the messages and the answer
// it kept.
func TestLLMCallShow(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s, base := openMigrated(t, dialect)
			kept := store.LLMCall{ID: "call_kept", JobID: 7, Kind: "retro_session", Model: "deepseek-v4-flash", Outcome: "ok",
				Messages: []store.LLMMessage{{Role: "system", Content: "mull-prompt: retro"}, {Role: "user", Content: "excerpt line 1\nline 2"}},
				Response: &store.LLMResponse{Content: `{"lessons":[]}`, Reasoning: "nothing to learn"}}
			bare := store.LLMCall{ID: "call_bare", JobID: 8, Kind: "retro_session", Model: "deepseek-v4-flash", Outcome: "ok"}
			for _, c := range []store.LLMCall{kept, bare} {
				if err := s.InsertLLMCall(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			code, out, errOut := mull(t, ctx, append(base, "llm", "calls", "show", "call_kept")...)
			if code != 0 || !strings.Contains(out, "--- message 2: user (21 chars)\nexcerpt line 1\nline 2\n") ||
				!strings.Contains(out, "job:       7 (retro_session)") ||
				!strings.Contains(out, "--- answer: reasoning (16 chars)\nnothing to learn\n") ||
				!strings.Contains(out, "--- answer: content (14 chars)\n{\"lessons\":[]}\n") {
				t.Fatalf("show kept: exit %d\n%s%s", code, out, errOut)
			}
			code, out, errOut = mull(t, ctx, append(base, "llm", "calls", "show", "call_bare")...)
			if code != 0 || !strings.Contains(out, `messages:  not kept (llm.keep_prompts = "7d"`) || !strings.Contains(out, "answer:    not kept") {
				t.Fatalf("show bare: exit %d\n%s%s", code, out, errOut)
			}
			code, out, _ = mull(t, ctx, append(base, "llm", "calls", "show", "call_bare", "--json")...)
			if code != 0 || !strings.Contains(out, `"messages": []`) || !strings.Contains(out, `"response": null`) {
				t.Fatalf("show --json: exit %d\n%s", code, out)
			}
			code, _, errOut = mull(t, ctx, append(base, "llm", "calls", "show", "call_nope")...)
			if code == 0 || !strings.Contains(errOut, `llm call "call_nope": no such llm call`) {
				t.Fatalf("show unknown: exit %d\n%s", code, errOut)
			}
		})
	}
}
