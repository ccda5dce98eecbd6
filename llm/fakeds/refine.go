package fakeds

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
)

// refineReview answers a refine_review call (learn/harness's prompts),
// recognised by the job kind (the X-Mull-Job-Kind header: the prompts'
// shared system text names no prompt type). Which of its two calls it is
// the request's last "# Your answer: ..." heading says:
//
//   - the review gate's verdict: approved when the trajectory shows a
//     failure (a "[<type> failed] ..." or "[error] ..." signal line, the
//     summary route's), declined otherwise, with a one-sentence rationale;
//   - the refiner's plan: one create of a memory entry naming the first
//     failure (or a stock note when the trajectory shows none), its id
//     derived from that text, so one trajectory plans one id.
//
// Scripts (fakeds.Rule with Kind "refine_review" and a Marker such as
// "the review gate's verdict") override either answer.
func refineReview(p Prompt) any {
	material, plan := refineRequest(p.Messages)
	failure := firstFailure(material)
	if !plan {
		if failure == "" {
			return map[string]any{"approved": false, "rationale": "fake-deepseek: the trajectory shows no failure, so nothing durable emerged"}
		}
		return map[string]any{"approved": true, "rationale": "fake-deepseek: the trajectory shows a failure worth remembering: " + truncateRunes(failure, 120)}
	}
	content := "No failure was seen in the session fake-deepseek reviewed."
	if failure != "" {
		content = "Known failure seen in a session: " + truncateRunes(failure, 300)
	}
	h := fnv.New32a()
	h.Write([]byte(content))
	id := fmt.Sprintf("fake-note-%08x", h.Sum32())
	return map[string]any{
		"id":      "refine_fake",
		"summary": "fake-deepseek: remember what the session showed",
		"edits": []any{map[string]any{
			"action": "create", "kind": "memory", "id": id, "content": content,
			"reason": "the trajectory showed it", "blastRadius": "session",
		}},
	}
}

// answerHeading starts the section of a refine_review request that says
// which answer it wants (learn/harness's prompts).
const answerHeading = "# Your answer: "

// refineRequest is the request's text before its last answer heading (the
// material) and whether that heading asks for the refiner's plan.
func refineRequest(msgs []Message) (material string, plan bool) {
	var b strings.Builder
	for _, m := range msgs {
		if m.Role == "user" {
			b.WriteString(m.Content)
			b.WriteString("\n\n")
		}
	}
	all := b.String()
	i := strings.LastIndex(all, answerHeading)
	if i < 0 {
		return all, false
	}
	return all[:i], strings.HasPrefix(all[i+len(answerHeading):], "the refiner's plan")
}

// failureLine is a signal line of the summary route: "[tool_result
// failed] ...", "[turn_end failed] ...", "[error] ...".
var failureLine = regexp.MustCompile(`^\[(?:[a-z_]+ failed|error)\] (.+)$`)

// firstFailure is the text of the material's first failure line, "" when
// it has none.
func firstFailure(material string) string {
	for line := range strings.Lines(material) {
		if m := failureLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			return strings.TrimSpace(m[1])
		}
	}
	return ""
}
