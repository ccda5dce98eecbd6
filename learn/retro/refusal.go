package retro

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/trust"
)

// Refusal is a rejected entry as a retro's result keeps it: where it was in
// the answer and which check refused it, never what it said. A refused
// text never passed the trust gate (the checks come first), so it may hold
// a credential or an instruction; and a redacted excerpt of an instruction
// is still one. The answer itself stays in the job's LLM call record.
type Refusal struct {
	// Section is the answer's section: lessons, facts, resources, methods,
	// handoff, playbooks, supersede or proposal.
	Section string `json:"section"`
	// Field is the entry's path in the answer ("facts[2]",
	// "supersede[1].why").
	Field string `json:"field"`
	// Reason is the check's complaint, each value of the answer it quoted
	// masked as "…".
	Reason string `json:"reason"`
}

// MaxReasonRunes bounds a Refusal's reason.
const MaxReasonRunes = 300

// reasonWithheld replaces a reason that still held something the trust
// gate objects to once its quoted values were masked.
const reasonWithheld = "refused by its checks (the reason is withheld: it quoted the answer)"

// quoted matches a Go-quoted string (%q): how the checks quote what the
// model wrote.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// Refusals are c's rejected entries as Refusal rows, in answer order.
func (c Changes) Refusals() []Refusal {
	out := make([]Refusal, 0, len(c.Rejected))
	for _, r := range c.Rejected {
		out = append(out, r.Refusal())
	}
	return out
}

// Refusal is r without its text: its section, its field and the check's
// reason with every quoted value masked. A reason the trust gate would
// still redact or quarantine is withheld whole.
func (r Rejected) Refusal() Refusal {
	field := r.Field
	if field == "" {
		field = "?"
	}
	section, _, _ := strings.Cut(field, "[")
	section, _, _ = strings.Cut(section, ".")
	reason := "refused"
	if r.Err != nil {
		reason = quoted.ReplaceAllString(r.Err.Error(), `"…"`)
	}
	if v := trust.Check(reason); v.Quarantined || v.Redacted > 0 {
		reason = reasonWithheld
	}
	if utf8.RuneCountInString(reason) > MaxReasonRunes {
		reason = string([]rune(reason)[:MaxReasonRunes-1]) + "…"
	}
	return Refusal{Section: section, Field: field, Reason: reason}
}
