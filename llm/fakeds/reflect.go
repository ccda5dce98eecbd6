package fakeds

import (
	"strings"
)

// reflectTask answers a reflect_task call (learn/reflection's schema) from
// the TASK block of its material, the way a model judging only the task's
// outcome would:
//
//   - a task that did not succeed (failed, abandoned, aborted) gets one new
//     failure lesson of the workspace scope, so every later session of the
//     workspace sees it: its problem quotes the result (where an agent
//     names the step that failed), attempted the goal, avoid the result as
//     the step not to repeat; each field cut to lesson.MaxFieldRunes;
//   - a task that succeeded, or material without a TASK block, gets one
//     "none": nothing new was learnt, nothing is stored.
//
// The call is recognised by its prompt type reflect_task: a
// "mull-prompt: reflect_task" line in the system message, or, when the
// system message names no type, the X-Mull-Job-Kind header (see Prompt.Kind).
func reflectTask(p Prompt) any {
	t := readTaskBrief(p.User)
	out := map[string]any{"source": "fake-deepseek's reflection on the task's outcome"}
	if t.id != "" {
		out["task_id"] = t.id
	}
	if t.status == "" || t.status == "succeeded" {
		out["assessment"] = "fake-deepseek: the task " + orNone(t.status, "has no status in the material") + "; nothing new was learnt."
		out["lessons"] = []any{map[string]any{"relation": "none"}}
		return out
	}
	goal, result := orNone(t.goal, "(no goal given)"), orNone(t.result, "(no result given)")
	field := func(s string) string { return strings.TrimSpace(truncateRunes(s, maxLessonField)) }
	out["assessment"] = "fake-deepseek: the task " + t.status + " against its expected result: " + truncateRunes(result, 300)
	out["lessons"] = []any{map[string]any{
		"relation":     "new",
		"kind":         "failure",
		"scope":        "workspace",
		"problem":      field("The task " + t.status + ": " + result),
		"attempted":    field(goal),
		"avoid":        field("repeating the step that failed: " + result),
		"instead":      "check that what the step depends on exists before running it",
		"applies_when": field("a task in this workspace comes back to: " + goal),
		"confidence":   "medium",
		"boundary":     "the failure was seen in a task of this workspace, so it belongs to the workspace",
	}}
	return out
}

// maxLessonField is learn/lesson's MaxFieldRunes: a longer field is
// refused, so the reply cuts each one to it (the test checks the two agree).
const maxLessonField = 180

func orNone(s, none string) string {
	if strings.TrimSpace(s) == "" {
		return none
	}
	return s
}

// taskBrief is what reflectTask reads of a reflection's material.
type taskBrief struct {
	id, goal, status, result string
}

// readTaskBrief reads the material's first line ("REFLECTION MATERIAL for
// task ID") and its TASK block ("  goal:     | text", "  status:   failed",
// "  result:   | text"; a quoted value stands behind the gutter "|").
func readTaskBrief(user string) taskBrief {
	var t taskBrief
	in := false
	for line := range strings.Lines(user) {
		line = strings.TrimRight(line, "\r\n")
		if rest, ok := strings.CutPrefix(line, "REFLECTION MATERIAL for task "); ok && t.id == "" {
			t.id = strings.TrimSpace(rest)
			continue
		}
		if strings.TrimSpace(line) == "TASK" {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "  ") { // the block ends at its first unindented line
			break
		}
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		if q, ok := strings.CutPrefix(val, "|"); ok {
			val = strings.TrimSpace(q)
		}
		if val == "(none)" {
			val = ""
		}
		switch key {
		case "goal":
			t.goal = val
		case "status":
			t.status = val
		case "result":
			t.result = val
		}
	}
	return t
}
