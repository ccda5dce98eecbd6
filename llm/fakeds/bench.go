package fakeds

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// benchCell answers a bench_cell call (learn/bench's prompts), recognised
// by the job kind (the X-Mull-Job-Kind header: the seed's system prompts
// name no prompt type) and told apart by the system prompt's opening
// words, the seed's EXECUTOR_SYSTEM_PROMPT or REVIEWER_SYSTEM_PROMPT:
//
//   - the executor gets evidence {completed, summary, actions,
//     observations} whose observations echo up to 5 lines of the prompt's
//     snapshot section (the harness overview, or the memory digest), so a
//     side shown different state reports different evidence;
//   - the judge gets score 40 + 15 per backquoted `term` of the rubric the
//     evidence mentions (case-insensitive), capped at 100, with feedback
//     naming the terms it lacks.
//
// Both are deterministic: the same prompt gets the same answer. Scripts
// (a Rule with Kind "bench_cell" and a Marker such as "# Rubric") override
// either.
func benchCell(p Prompt) any {
	switch sys := systemText(p.Messages); {
	case strings.HasPrefix(sys, judgeOpening):
		return benchJudge(p.User)
	case strings.HasPrefix(sys, executorOpening):
		return benchExecutor(p.User)
	}
	return map[string]any{"ok": true, "note": "fake-deepseek: a bench_cell call with neither the executor's nor the judge's system prompt"}
}

// The opening words of the seed's two system prompts (learn/bench's
// ExecutorSystem and JudgeSystem).
const (
	executorOpening = "You are the executor of a benchmark cell."
	judgeOpening    = "You are the reviewer of one benchmark cell."
)

// snapshotHeadings start the executor prompt's snapshot section.
var snapshotHeadings = []string{"# Harness state overview (captured snapshot)", "# Memory (captured snapshot)"}

func benchExecutor(user string) any {
	var lines []string
	if i, h := lastHeading(user, snapshotHeadings); i >= 0 {
		for line := range strings.Lines(user[i+len(h):]) {
			if line = strings.TrimSpace(line); line != "" && len(lines) < 5 {
				lines = append(lines, truncateRunes(line, 300))
			}
		}
	}
	obs := lines
	if len(obs) == 0 {
		obs = []string{"the captured snapshot section is empty"}
	}
	return map[string]any{
		"completed":    true,
		"summary":      fmt.Sprintf("fake-deepseek worked the case with %d line(s) of captured state", len(lines)),
		"actions":      []string{"read the case statement", "read the captured snapshot"},
		"observations": obs,
	}
}

// rubricTerm is a backquoted term of a rubric.
var rubricTerm = regexp.MustCompile("`([^`\n]+)`")

const (
	rubricHeading   = "# Rubric\n"
	evidenceHeading = "# Executor evidence\n"
)

func benchJudge(user string) any {
	rubric, evidence := user, ""
	if i := strings.Index(user, rubricHeading); i >= 0 {
		rubric = user[i+len(rubricHeading):]
	}
	if j := strings.LastIndex(rubric, evidenceHeading); j >= 0 {
		rubric, evidence = rubric[:j], rubric[j+len(evidenceHeading):]
	}
	text := strings.ToLower(evidenceText(evidence))
	var found int
	var missing, seen []string
	for _, m := range rubricTerm.FindAllStringSubmatch(rubric, -1) {
		term := strings.TrimSpace(m[1])
		if term == "" || containsFold(seen, term) {
			continue
		}
		seen = append(seen, term)
		if strings.Contains(text, strings.ToLower(term)) {
			found++
		} else {
			missing = append(missing, "`"+term+"`")
		}
	}
	feedback := "fake-deepseek: the evidence covers every rubric term"
	if len(missing) > 0 {
		feedback = "fake-deepseek: the evidence does not mention " + strings.Join(missing, ", ")
	}
	return map[string]any{"score": min(100, 40+15*found), "feedback": feedback}
}

// evidenceText is the evidence's strings joined, decoded from its JSON so
// escapes do not hide a term; the raw text when it does not decode.
func evidenceText(raw string) string {
	var v any
	if json.Unmarshal([]byte(strings.TrimSpace(raw)), &v) != nil {
		return raw
	}
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			b.WriteString(t)
			b.WriteByte('\n')
		case []any:
			for _, x := range t {
				walk(x)
			}
		case map[string]any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(v)
	return b.String()
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// lastHeading is where the last of headings starting a line of s begins,
// and which it is; -1 when none does.
func lastHeading(s string, headings []string) (int, string) {
	at, which := -1, ""
	for _, h := range headings {
		if i := strings.LastIndex(s, h); i > at && (i == 0 || s[i-1] == '\n') {
			at, which = i, h
		}
	}
	return at, which
}

// systemText is the first system message's text.
func systemText(msgs []Message) string {
	for _, m := range msgs {
		if m.Role == "system" {
			return strings.TrimSpace(m.Content)
		}
	}
	return ""
}
