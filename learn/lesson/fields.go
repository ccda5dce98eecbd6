package lesson

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/memory"
)

// Limits on a lesson's fields. Every field but SourceText is one line.
const (
	// MinFieldRunes: two runes still carry meaning in Chinese, as for a
	// memory's text (memory.MinTextRunes).
	MinFieldRunes = memory.MinTextRunes
	// MaxFieldRunes caps each one-line field. 180 keeps the longest
	// one-line rendering (a failure's "avoid: … (instead: …)") within
	// memory.MaxTextRunes, so Text never needs cutting.
	MaxFieldRunes = 180
	// MaxSourceTextRunes caps SourceText, the agent's quote of where the
	// lesson came from: it may span lines and is never injected.
	MaxSourceTextRunes = 4000
	// NarrowerRatio: a correction with fewer than 1/NarrowerRatio of the
	// problem's runes says less than the problem (see checkNotNarrower).
	NarrowerRatio = 3
)

// ValidateFields checks a structured lesson's fields for its kind and
// scope, and reports the first bad one as a *memory.FieldError named by
// the field's JSON name. The required fields are the seed's: a lesson
// needs problem and correction; a directive (a required method) needs
// correction, its problem is optional; a failure needs problem and avoid,
// instead is optional, and it has no correction. A field that belongs to
// another kind is refused, never silently dropped: avoid and instead only
// on a failure, correction never on one. boundary is required outside the
// reflection scope (the seed's 2.5: the program checks the declaration
// exists, not that it is right). confidence is low, medium or high, or
// empty for a lesson nobody rated (the seed's own add command takes none).
func ValidateFields(kind memory.Kind, scope memory.LessonScope, f memory.LessonFields) error {
	if !kind.Structured() {
		return &memory.FieldError{Field: "kind", Problem: fmt.Sprintf("%q is not a lesson kind (lesson, directive, failure)", kind)}
	}
	for _, c := range fieldList(f) {
		if err := checkField(c.name, c.v, c.max, c.multiline); err != nil {
			return err
		}
	}
	req := func(field, v, why string) error {
		if strings.TrimSpace(v) == "" {
			return &memory.FieldError{Field: field, Problem: "required " + why}
		}
		return nil
	}
	not := func(field, v, why string) error {
		if strings.TrimSpace(v) != "" {
			return &memory.FieldError{Field: field, Problem: why}
		}
		return nil
	}
	var errs []error
	switch kind {
	case memory.Lesson:
		errs = []error{req("problem", f.Problem, "for a lesson (what happened)"),
			req("correction", f.Correction, "for a lesson (what to do instead)"),
			not("avoid", f.Avoid, "only a failure has avoid; a lesson says what to do in correction"),
			not("instead", f.Instead, "only a failure has instead; a lesson says what to do in correction")}
	case memory.Directive:
		errs = []error{req("correction", f.Correction, "for a directive (the required method)"),
			not("avoid", f.Avoid, "only a failure has avoid; a directive says the method in correction"),
			not("instead", f.Instead, "only a failure has instead; a directive says the method in correction")}
	case memory.Failure:
		errs = []error{req("problem", f.Problem, "for a failure (the bad outcome)"),
			req("avoid", f.Avoid, "for a failure (what not to do)"),
			not("correction", f.Correction, "a failure has no correction; put a known alternative in instead")}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if kind != memory.Failure {
		if err := checkNotNarrower(f.Problem, f.Correction); err != nil {
			return err
		}
	}
	switch f.Confidence {
	case "", memory.ConfidenceLow, memory.ConfidenceMedium, memory.ConfidenceHigh:
	default:
		return &memory.FieldError{Field: "confidence", Problem: fmt.Sprintf("%q is not one of low, medium, high", f.Confidence)}
	}
	if !knownScope(scope) {
		return &memory.FieldError{Field: "scope", Problem: scopeProblem(scope)}
	}
	if scope != memory.LessonReflection && strings.TrimSpace(f.Boundary) == "" {
		return &memory.FieldError{Field: "boundary", Problem: "required outside the reflection scope: say why this lesson belongs to " + string(scope)}
	}
	return nil
}

// checkNotNarrower is the mechanical part of the seed's rule that a
// correction must not be narrower than its problem ("如果修法说得比问题还少,
// 两者必有一个是错的": if the fix says less than the problem, one of the two
// is wrong). Whether a correction covers a problem is a judgement; two
// cases can be told from the text alone, and only those are refused:
//
//   - the correction restates the problem or a piece of it: its normalized
//     text (memory.Normalize) equals or is contained in the problem's. A
//     phrase lifted from the problem describes what happened, not what to
//     do instead.
//   - the correction says much less: fewer than 1/NarrowerRatio of the
//     problem's runes (both trimmed). A problem of 90 characters answered
//     by "test it" cannot have been replaced by it. The ratio is loose on
//     purpose: a good correction is often shorter than its problem, and a
//     false refusal costs a lesson, so only a gap of 3x is refused.
//
// An empty problem (a directive's is optional) is never narrower.
func checkNotNarrower(problem, correction string) error {
	p, c := memory.Normalize(problem), memory.Normalize(correction)
	if p == "" || c == "" {
		return nil
	}
	if strings.Contains(p, c) {
		return &memory.FieldError{Field: "correction", Problem: "restates the problem (or part of it) instead of saying what to do; the correction must not be narrower than the problem"}
	}
	pn := utf8.RuneCountInString(strings.TrimSpace(problem))
	cn := utf8.RuneCountInString(strings.TrimSpace(correction))
	if cn*NarrowerRatio < pn {
		return &memory.FieldError{Field: "correction", Problem: fmt.Sprintf("%d characters for a problem of %d: it says less than the problem (under 1/%d of it); the correction must not be narrower than the problem", cn, pn, NarrowerRatio)}
	}
	return nil
}

type fieldCheck struct {
	name, v   string
	max       int
	multiline bool
}

// fieldList is every field with its JSON name and limit, in the order the
// seed's table lists them.
func fieldList(f memory.LessonFields) []fieldCheck {
	return []fieldCheck{
		{"problem", f.Problem, MaxFieldRunes, false},
		{"attempted", f.Attempted, MaxFieldRunes, false},
		{"correction", f.Correction, MaxFieldRunes, false},
		{"applies_when", f.AppliesWhen, MaxFieldRunes, false},
		{"avoid", f.Avoid, MaxFieldRunes, false},
		{"instead", f.Instead, MaxFieldRunes, false},
		{"boundary", f.Boundary, MaxFieldRunes, false},
		{"source", f.Source, MaxFieldRunes, false},
		{"narrowed", f.Narrowed, MaxFieldRunes, false},
		{"source_text", f.SourceText, MaxSourceTextRunes, true},
	}
}

// checkField checks one optional field: absent is fine (the kind's rules
// say what is required); present, it is storable and within limits.
func checkField(name, v string, max int, multiline bool) error {
	if v == "" {
		return nil
	}
	if err := memory.CheckStorable(name, v); err != nil {
		return err
	}
	if !multiline {
		if err := memory.CheckLine(name, v, MinFieldRunes, max); err != nil {
			return err
		}
		return checkLabel(name, v)
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(v)); n > max {
		return &memory.FieldError{Field: name, Problem: fmt.Sprintf("longer than %d characters", max)}
	}
	return nil
}

// Validate checks a structured lesson about to be written: the memory's
// own rules (memory.Validate), the fields for its kind and scope
// (ValidateFields), its scope against its workspace and sessions
// (CheckScope), a known state, and that Text is the one-line rendering of
// its fields (Line), which is what search, duplicate folding and the
// trust gate read. Callers gate each field (the memories package), then
// set Text = Line(m), then validate.
func Validate(m memory.Memory) error {
	if m.Lesson == nil {
		return &memory.FieldError{Field: "lesson", Problem: "required: a " + string(m.Kind) + " has structured fields"}
	}
	// The fields first: a too-short problem is named as the problem, not
	// as the Text rendered from it.
	if m.Kind.Structured() {
		if err := ValidateFields(m.Kind, m.Scope, *m.Lesson); err != nil {
			return err
		}
	}
	if err := memory.Validate(m); err != nil {
		return err
	}
	if err := CheckScope(m); err != nil {
		return err
	}
	switch m.State {
	case "", memory.StateActive, memory.StateSuperseded, memory.StateDeprecated, memory.StateDeleted:
	default:
		return &memory.FieldError{Field: "state", Problem: fmt.Sprintf("%q is not one of active, superseded, deprecated, deleted", m.State)}
	}
	if want := Line(m); m.Text != want {
		return &memory.FieldError{Field: "text", Problem: fmt.Sprintf("must be the one-line rendering of the lesson's fields (%q)", want)}
	}
	return nil
}

// Line is m's one-line Text rendering (OneLine of its fields and kind).
// A memory without structured fields keeps its Text.
func Line(m memory.Memory) string {
	if m.Lesson == nil {
		return m.Text
	}
	return OneLine(*m.Lesson, m.Kind)
}

// OneLine renders a lesson's fields as one line for memory.Text:
//
//	lesson:    "<problem> → <correction>"
//	directive: "Required method: <correction>"
//	failure:   "avoid: <avoid> (instead: <instead>)", or "avoid: <avoid>"
//
// The trigger, boundary and source stay out: Text is the lesson's content,
// what duplicates are folded by. Each field is trimmed and folded to one
// line; with MaxFieldRunes per field the result fits memory.MaxTextRunes.
func OneLine(f memory.LessonFields, kind memory.Kind) string {
	p, c := memory.OneLine(f.Problem), memory.OneLine(f.Correction)
	switch kind {
	case memory.Directive:
		return "Required method: " + c
	case memory.Failure:
		s := "avoid: " + memory.OneLine(f.Avoid)
		if in := memory.OneLine(f.Instead); in != "" {
			s += " (instead: " + in + ")"
		}
		return s
	}
	switch {
	case p == "":
		return c
	case c == "":
		return p
	}
	return p + " → " + c
}

// Parsed is a lesson read from a seed-style JSON record.
type Parsed struct {
	Kind   memory.Kind
	Fields memory.LessonFields
}

// seedFieldKeys are the record keys ParseFields reads; every other key (id,
// scope, session_id, task_id, timestamps…) is the record's machine side
// and is left to the caller. "narrowed" is not one: only an adversarial
// review that narrowed a lesson sets it, since [BOUNDARIES] says each such
// line "was checked against the strongest case for the old way".
var seedFieldKeys = []string{"kind", "pattern", "problem", "attempted", "correction", "applies_when",
	"confidence", "avoid", "instead", "boundary", "source", "source_text"}

// ParseFields reads a seed-style JSON lesson record with the seed's
// compatibility rules: a record with no kind (or "") is a lesson, and a
// bare pattern (the seed's old single field) is read as problem, with no
// migration of history. A record with both pattern and a different problem
// is refused: one of them would be dropped. Values must be strings; a
// wrong type or an unknown kind is a *memory.FieldError naming the key.
// It reads shape only: ValidateFields says whether the lesson is complete.
func ParseFields(data []byte) (Parsed, error) {
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return Parsed{}, fmt.Errorf("lesson record: %w", err)
	}
	if raw == nil {
		return Parsed{}, fmt.Errorf("lesson record: want a JSON object")
	}
	return ParseFieldsMap(raw)
}

// ParseFieldsMap is ParseFields on a decoded JSON object.
func ParseFieldsMap(raw map[string]any) (Parsed, error) {
	s := map[string]string{}
	for _, k := range seedFieldKeys {
		v, ok := raw[k]
		if !ok || v == nil {
			continue
		}
		str, ok := v.(string)
		if !ok {
			return Parsed{}, &memory.FieldError{Field: k, Problem: fmt.Sprintf("must be a string, got %T", v)}
		}
		s[k] = str
	}
	p := Parsed{Kind: memory.Kind(s["kind"])}
	if p.Kind == "" {
		p.Kind = memory.Lesson
	}
	if !p.Kind.Structured() {
		return Parsed{}, &memory.FieldError{Field: "kind", Problem: fmt.Sprintf("%q is not one of lesson, directive, failure", p.Kind)}
	}
	problem, pattern := s["problem"], s["pattern"]
	switch {
	case strings.TrimSpace(problem) == "":
		problem = pattern
	case strings.TrimSpace(pattern) != "" && memory.OneLine(pattern) != memory.OneLine(problem):
		return Parsed{}, &memory.FieldError{Field: "pattern", Problem: "given with a different problem; pattern is the old name of problem, send one"}
	}
	p.Fields = memory.LessonFields{
		Problem: problem, Attempted: s["attempted"], Correction: s["correction"],
		AppliesWhen: s["applies_when"], Confidence: memory.Confidence(s["confidence"]),
		Avoid: s["avoid"], Instead: s["instead"], Boundary: s["boundary"],
		Source: s["source"], SourceText: s["source_text"],
	}
	return p, nil
}

// reservedLabels are the words the lesson renderings (Render, the
// DECISION ENVIRONMENT, the lookup) put before a field or a block. A field
// that opens with one would read, once rendered, as a line mull wrote: a
// "(high) Required method: …" problem as a high-confidence directive, an
// "avoid: …" as a constraint.
var reservedLabels = []string{
	"required method", "avoid:", "instead:", "do instead:", "applies when:", "outcome:", "problem:",
	"correction:", "confidence:", "precedent:", "known failures", "decision environment", "also in effect",
	"source task", "other lessons in force",
}

// checkLabel refuses a one-line field that opens like a rendering's own
// label or tag: "(…)" (the confidence and scope tag), "[…]" (a block
// header such as [CONFLICTS], an [E1] entry) or a reserved label.
func checkLabel(name, v string) error {
	t := strings.ToLower(strings.TrimSpace(memory.FoldWidth(v)))
	refuse := func(what string) error {
		return &memory.FieldError{Field: name, Problem: "must not open with " + what + ": it would read as mull's own label once rendered"}
	}
	if strings.HasPrefix(t, "(") || strings.HasPrefix(t, "[") {
		return refuse(fmt.Sprintf("%q", t[:1]))
	}
	for _, l := range reservedLabels {
		if strings.HasPrefix(t, l) {
			return refuse(fmt.Sprintf("%q", strings.TrimSpace(l)))
		}
	}
	return nil
}
