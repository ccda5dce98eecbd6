package lesson

import (
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/trust"
)

// New builds a structured lesson to store from m as its writer gave it
// (kind, scope, library, sessions, task, provenance and raw fields), the
// way every lesson write path must: each field passes the write-time trust
// gate (trust.Check) as written, then the one-line fields are flattened;
// a field that reads like an instruction quarantines the whole lesson (kept,
// flagged with the field's name and the gate's reason, never served); Text
// becomes Line of the gated fields and is gated again as a whole, since an
// instruction can span two fields; the TTL comes from the text; then
// Validate. It returns how many credentials the gate redacted and a
// *memory.FieldError naming the field when the result is not a valid
// lesson. m.RecordedAt is set to now; the state is active.
func New(m memory.Memory, now time.Time) (memory.Memory, int, error) {
	if m.Lesson == nil {
		return memory.Memory{}, 0, &memory.FieldError{Field: "lesson", Problem: "required: a " + string(m.Kind) + " has structured fields"}
	}
	f := *m.Lesson
	redacted := 0
	m.Quarantined, m.QuarantineReason = false, ""
	for _, p := range []struct {
		name      string
		v         *string
		multiline bool
	}{{"problem", &f.Problem, false}, {"attempted", &f.Attempted, false}, {"correction", &f.Correction, false},
		{"applies_when", &f.AppliesWhen, false}, {"avoid", &f.Avoid, false}, {"instead", &f.Instead, false},
		{"boundary", &f.Boundary, false}, {"source", &f.Source, false}, {"narrowed", &f.Narrowed, false},
		{"source_text", &f.SourceText, true}} {
		if *p.v == "" {
			continue
		}
		if err := memory.CheckStorable(p.name, *p.v); err != nil {
			return memory.Memory{}, redacted, err
		}
		v := trust.Check(*p.v)
		redacted += v.Redacted
		if v.Quarantined && !m.Quarantined {
			m.Quarantined, m.QuarantineReason = true, p.name+": "+v.Reason
		}
		*p.v = v.Text
		if !p.multiline {
			*p.v = memory.OneLine(v.Text)
		}
	}
	m.Lesson = &f
	m.Text = Line(m)
	if v := trust.Check(m.Text); v.Quarantined && !m.Quarantined {
		m.Quarantined, m.QuarantineReason = true, "text: "+v.Reason
	}
	m.ID, m.RecordedAt, m.State = 0, now.UTC(), memory.StateActive
	m.InvalidAt, m.InvalidReason, m.SupersededBy = time.Time{}, "", 0
	m.TTLDays = memory.Volatility(m.Text)
	if err := Validate(m); err != nil {
		return memory.Memory{}, redacted, err
	}
	return m, redacted, nil
}
