package lesson

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mullhq/mull/learn/trust"
)

// The seed's wording of the DECISION ENVIRONMENT block, verbatim.
const (
	environmentHead    = "DECISION ENVIRONMENT (lessons in effect when this task started; "
	environmentOmitted = "  Also in effect, listed without detail ("
	environmentClose   = "These were the rules in force when you started. Judge whether any of them applied,\n" +
		"and whether you actually followed them — not whether they still seem right now."
)

// envWithheld stands in for a stored text the render-time gate refuses:
// the entry (and so its id) stays, only that text is not shown.
const envWithheld = "(not shown: withheld by the trust gate)"

// LessonRef is how a lesson id is written in a prompt or an answer: "L42".
// The prefix keeps it apart from the E-numbers of an environment, task ids
// and event seqs in the same text; ParseLessonRef reads it back (and a bare
// number), so lessons_lookup takes whatever the agent copied.
func LessonRef(id int64) string { return "L" + strconv.FormatInt(id, 10) }

// ParseLessonRef reads a lesson id written as LessonRef does ("L42", "l42")
// or as a bare number ("42"), surrounding space ignored.
func ParseLessonRef(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if len(t) > 0 && (t[0] == 'L' || t[0] == 'l') {
		t = t[1:]
	}
	id, err := strconv.ParseInt(t, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("lesson id %q: want a positive number, optionally prefixed with L (as in L42)", s)
	}
	return id, nil
}

// envEntryRef names the n-th detailed entry of an environment (1-based) and
// the lesson it is: "[E1 L42]". The E-number is the entry's place in the
// snapshot, which the seed's material and lookup use; the lesson id is what
// the agent passes to lessons_lookup and what a reflection's target_id and
// the precedent counts refer to, so both are shown.
func envEntryRef(n int, id int64) string {
	return "[E" + strconv.Itoa(n) + " " + LessonRef(id) + "]"
}

// envField is one stored text through the render-time gate (trust.Line:
// one line, redacted, neutralized), or envWithheld when it must not be
// shown. Everything a snapshot holds reaches a prompt, and a snapshot is
// never rewritten, so it is gated every time it is rendered.
func envField(s string) string {
	if l, ok := trust.Line(s); ok {
		return l
	}
	return envWithheld
}

// envEntryHead is "(scope, confidence) problem", with the kind added when it
// is not a plain lesson: a directive is a required method and a failure a
// constraint, which the agent must see to judge whether it followed them.
func envEntryHead(e Entry) string {
	kind := e.Kind
	if kind == "lesson" {
		kind = ""
	}
	return envTagged(envField(e.Problem), e.Scope, e.Confidence, kind)
}

// envTagged is "(tag, tag) text"; empty tags are left out, and the
// parentheses with them when none is left.
func envTagged(text string, tags ...string) string {
	var shown []string
	for _, t := range tags {
		if strings.TrimSpace(t) != "" {
			shown = append(shown, envField(t))
		}
	}
	if len(shown) == 0 {
		return text
	}
	return "(" + strings.Join(shown, ", ") + ") " + text
}

// envEntryDetail is the indented lines under an entry: what to do instead
// (a failure's avoid and instead; a directive's required method) and when
// it applies. Empty fields are left out.
func envEntryDetail(e Entry, indent string) []string {
	var out []string
	add := func(label, v string) {
		if strings.TrimSpace(v) != "" {
			out = append(out, indent+label+envField(v))
		}
	}
	switch e.Kind {
	case "failure":
		add("avoid: ", e.Avoid)
		add("instead: ", e.Instead)
	case "directive":
		add("required method: ", e.Correction)
	default:
		add("do instead: ", e.Correction)
	}
	add("applies when: ", e.AppliesWhen)
	return out
}

// RenderEnvironment renders s as the DECISION ENVIRONMENT block of a
// task's reflection material, in the seed's shape and wording:
//
//	DECISION ENVIRONMENT (lessons in effect when this task started; 20 total, 12 detailed):
//	  [E1 L42] (global, high) <problem>
//	        do instead: <correction>
//	        applies when: <applies_when>
//	  …
//
//	  Also in effect, listed without detail (8):
//	  [L7] (low) <problem>
//	  …
//
//	These were the rules in force when you started. Judge whether any of them applied,
//	and whether you actually followed them — not whether they still seem right now.
//
// "N detailed" is shown only when some lessons were listed without detail.
// The total is every lesson s lists (what BuildSnapshot writes as Count), so
// no id the snapshot holds is left out of the block. Every stored text goes
// through the render-time gate; a refused text is replaced, its entry kept.
func RenderEnvironment(s Snapshot) string {
	var b strings.Builder
	total := len(s.Lessons) + len(s.Omitted)
	b.WriteString(environmentHead + strconv.Itoa(total) + " total")
	if len(s.Omitted) > 0 {
		b.WriteString(", " + strconv.Itoa(len(s.Lessons)) + " detailed")
	}
	b.WriteString("):\n")
	if total == 0 {
		b.WriteString("  (no lessons were in force)\n")
	}
	for i, e := range s.Lessons {
		b.WriteString("  " + envEntryRef(i+1, e.ID) + " " + envEntryHead(e) + "\n")
		for _, l := range envEntryDetail(e, "        ") {
			b.WriteString(l + "\n")
		}
	}
	if len(s.Omitted) > 0 {
		b.WriteString("\n" + environmentOmitted + strconv.Itoa(len(s.Omitted)) + "):\n")
		for _, o := range s.Omitted {
			b.WriteString("  [" + LessonRef(o.ID) + "] " + envTagged(envField(o.Problem), o.Confidence) + "\n")
		}
	}
	b.WriteString("\n" + environmentClose)
	return b.String()
}
