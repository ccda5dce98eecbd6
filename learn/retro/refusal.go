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
const reasonWithheld = "withheld: the reason itself reads as an instruction or holds a credential"

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
		reason = safeReason(r.Err.Error())
	}
	return Refusal{Section: section, Field: field, Reason: reason}
}

// safeReason is a check's message fit to keep: every quoted value masked,
// withheld whole when the trust gate still objects, cut to MaxReasonRunes.
func safeReason(s string) string {
	s = quoted.ReplaceAllString(s, `"…"`)
	if v := trust.Check(s); v.Quarantined || v.Redacted > 0 {
		return reasonWithheld
	}
	if utf8.RuneCountInString(s) > MaxReasonRunes {
		s = string([]rune(s)[:MaxReasonRunes-1]) + "…"
	}
	return s
}

// DroppedRow is an id of the answer that was not applied, as a retro's
// result keeps it: the field that named it, the id when it was one (what
// the model wrote otherwise is not kept), and why.
type DroppedRow struct {
	Field string `json:"field"`
	// ID is 0 for a malformed reference.
	ID     int64  `json:"id,omitempty"`
	Reason string `json:"reason"`
	// Detail is DroppedRef.Detail, its quoted values masked.
	Detail string `json:"detail,omitempty"`
}

// DroppedRows are c.Dropped as DroppedRow rows, in answer order.
func (c Changes) DroppedRows() []DroppedRow {
	out := make([]DroppedRow, 0, len(c.Dropped))
	for _, d := range c.Dropped {
		row := DroppedRow{Field: d.Field, Reason: d.Reason}
		if !d.Ref.Malformed() {
			row.ID = d.Ref.ID
		}
		if d.Detail != "" {
			row.Detail = safeReason(d.Detail)
		}
		out = append(out, row)
	}
	return out
}

// HeldRow is a quarantined text of no memory (Held) as a retro's result
// keeps it: its kind and the gate's reason, not its text (the quarantine
// table keeps that, never served).
type HeldRow struct {
	Kind string `json:"kind"`
	// Field is the text's path in the answer ("playbooks[1]").
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

// HeldRows are c.Held as HeldRow rows.
func (c Changes) HeldRows() []HeldRow {
	out := make([]HeldRow, 0, len(c.Held))
	for _, h := range c.Held {
		// Held.Reason is "<field>: <the gate's reason>" (Changes.gate).
		field, why, ok := strings.Cut(h.Reason, ": ")
		if !ok {
			field, why = "", h.Reason
		}
		out = append(out, HeldRow{Kind: h.Kind, Field: field, Reason: safeReason(why)})
	}
	return out
}
