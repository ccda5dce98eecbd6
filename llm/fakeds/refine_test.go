package fakeds_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/llm/fakeds"
)

// The default refine_review answers pass learn/harness's strict parsing:
// the review approves a trajectory that shows a failure and declines one
// that does not; the plan creates one memory entry naming the failure,
// the same id for the same trajectory. The call is told by the job kind
// and its last "# Your answer:" heading.
func TestRefineReviewDefaultReply(t *testing.T) {
	_, ts := start(t, fakeds.Options{})
	header := http.Header{"X-Mull-Job-Kind": {"refine_review"}}
	ask := func(t *testing.T, p harness.Prompt) string {
		t.Helper()
		body := map[string]any{"model": "deepseek-v4-flash", "response_format": map[string]any{"type": "json_object"},
			"thinking": map[string]any{"type": "disabled"},
			"messages": []map[string]any{msg("system", p.System), msg("user", p.Material), msg("user", p.Ask)}}
		resp, out := post(t, ts, "/v1/chat/completions", body, header)
		var got wireToolAnswer
		if err := json.Unmarshal([]byte(out), &got); err != nil || resp.StatusCode != 200 || len(got.Choices) != 1 {
			t.Fatalf("status %d body %s (%v)", resp.StatusCode, out, err)
		}
		return got.Choices[0].Message.Content
	}
	material := func(failed bool) harness.MaterialInput {
		turns := []harness.Turn{{Type: "user_message", Text: "fix the pager"}, {Type: "assistant_message", Text: "done"}}
		if failed {
			turns = append(turns, harness.Turn{Type: "tool_result", Text: "bash go test (exit 1): FAIL TestPage2", Failed: true})
		}
		text, _ := harness.Trajectory(harness.TrajectoryInput{Turns: turns, MaxChars: 12000, SignalRatio: 0.5})
		return harness.MaterialInput{Trigger: harness.TurnInterval, Trajectory: text}
	}
	for _, failed := range []bool{false, true} {
		r, err := harness.ParseReview([]byte(ask(t, harness.ReviewPrompt(material(failed)))))
		if err != nil || r.Approved != failed || r.Rationale == "" {
			t.Fatalf("failure %t: review %+v, %v; want approved %t", failed, r, err, failed)
		}
	}
	review := &harness.Review{Approved: true, Rationale: "a failure"}
	plan := func() harness.Proposal {
		t.Helper()
		p, err := harness.ParseProposal([]byte(ask(t, harness.PlanPrompt(material(true), harness.Local("s1"), review, ""))))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := plan()
	if len(p.Edits) != 1 || p.Edits[0].Action != harness.Create || p.Edits[0].Kind != harness.KindMemory ||
		!strings.HasPrefix(p.Edits[0].ID, "fake-note-") || p.Edits[0].Content == nil || !strings.Contains(*p.Edits[0].Content, "FAIL TestPage2") {
		t.Fatalf("plan %+v", p)
	}
	if again := plan(); again.Edits[0].ID != p.Edits[0].ID {
		t.Fatalf("the same trajectory planned ids %s and %s", p.Edits[0].ID, again.Edits[0].ID)
	}
	if errs := harness.Validate(p.Edits[0]); errs != "" {
		t.Fatalf("the planned edit fails rule 1: %s", errs)
	}
}
