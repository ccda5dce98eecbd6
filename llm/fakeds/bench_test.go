package fakeds_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/llm/fakeds"
)

// The default bench_cell answers pass learn/bench's strict parsing. The
// executor's evidence echoes the snapshot section (up to 5 lines), so the
// side with memory reports what the side without lacks; the judge scores
// 40 + 15 per backquoted rubric term the evidence mentions and names the
// missing ones. The same prompt gets the same answer.
func TestBenchCellDefaultReply(t *testing.T) {
	_, ts := start(t, fakeds.Options{})
	ask := func(t *testing.T, system, user string) string {
		t.Helper()
		body := map[string]any{"model": "deepseek-v4-flash", "response_format": map[string]any{"type": "json_object"},
			"thinking": map[string]any{"type": "disabled"}, "messages": []map[string]any{msg("system", system), msg("user", user)}}
		resp, out := post(t, ts, "/v1/chat/completions", body, http.Header{"X-Mull-Job-Kind": {"bench_cell"}})
		var got wireToolAnswer
		if err := json.Unmarshal([]byte(out), &got); err != nil || resp.StatusCode != 200 || len(got.Choices) != 1 {
			t.Fatalf("status %d body %s (%v)", resp.StatusCode, out, err)
		}
		return got.Choices[0].Message.Content
	}
	c := bench.Case{ID: "c1", Statement: "Add a health endpoint.", Rubric: "Uses `pnpm`, edits `server/api.ts`, runs `typecheck`."}
	digest := "- always use pnpm, never npm\n- the API lives in server/api.ts\n- a\n- b\n- c\n- sixth line is not echoed"
	with := bench.Snapshot{ID: "cand", Kind: bench.MemorySnapshot, Digest: digest}
	without := bench.Snapshot{ID: "ref", Kind: bench.MemorySnapshot}

	evWith, err := bench.ParseEvidence(ask(t, bench.ExecutorSystem, bench.ExecutorPrompt(c, with)))
	if err != nil {
		t.Fatal(err)
	}
	if len(evWith.Observations) != 5 || !strings.Contains(evWith.Observations[0], "pnpm") ||
		slices.ContainsFunc(evWith.Observations, func(o string) bool { return strings.Contains(o, "sixth") }) {
		t.Errorf("evidence with memory %+v, want the digest's first 5 lines echoed", evWith)
	}
	evWithout, err := bench.ParseEvidence(ask(t, bench.ExecutorSystem, bench.ExecutorPrompt(c, without)))
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := bench.ParseEvidence(ask(t, bench.ExecutorSystem, bench.ExecutorPrompt(c, without))); !slices.Equal(again.Observations, evWithout.Observations) {
		t.Errorf("not deterministic: %+v then %+v", evWithout, again)
	}

	vWith, err := bench.ParseVerdict(ask(t, bench.JudgeSystem, bench.JudgePrompt(c, evWith)))
	if err != nil {
		t.Fatal(err)
	}
	if vWith.Score != 70 || !strings.Contains(vWith.Feedback, "`typecheck`") || strings.Contains(vWith.Feedback, "`pnpm`") {
		t.Errorf("verdict with memory %+v, want 40 + 2×15 = 70 naming only `typecheck` as missing", vWith)
	}
	vWithout, err := bench.ParseVerdict(ask(t, bench.JudgeSystem, bench.JudgePrompt(c, evWithout)))
	if err != nil {
		t.Fatal(err)
	}
	if vWithout.Score != 40 || !strings.Contains(vWithout.Feedback, "`pnpm`, `server/api.ts`, `typecheck`") {
		t.Errorf("verdict without memory %+v, want 40 naming every term", vWithout)
	}
	full := bench.Evidence{Summary: "pnpm server/api.ts typecheck", Actions: []string{}, Observations: []string{}}
	rubric := bench.Case{Statement: "s", Rubric: "`pnpm` `server/api.ts` `typecheck` `alpha` `beta`"}
	if v, err := bench.ParseVerdict(ask(t, bench.JudgeSystem, bench.JudgePrompt(rubric, full))); err != nil || v.Score != 85 {
		t.Errorf("3 of 5 terms: %+v, %v; want 85", v, err)
	}
	rubric.Rubric += " `pnpm` " // a repeated term counts once
	full.Summary += " alpha beta"
	if v, err := bench.ParseVerdict(ask(t, bench.JudgeSystem, bench.JudgePrompt(rubric, full))); err != nil || v.Score != 100 {
		t.Errorf("5 of 5 terms: %+v, %v; want 100 (capped)", v, err)
	}
}
