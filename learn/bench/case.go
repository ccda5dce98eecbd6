package bench

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The case limits (mull's: the seed sets none, but every text here reaches
// a prompt on every cell of every run, and an id is a key in URLs and
// step names).
const (
	MaxIDRunes         = 128
	MaxTitleRunes      = 200
	MaxStatementRunes  = 8000
	MaxRubricRunes     = 4000
	MaxCapabilityRunes = 100
)

// idGrammar is a case id's and a set name's grammar: letters, digits,
// ".", "_" and "-", so an id is safe in a URL path, a file name and a
// workflow step name ("cell/<case>/<side>/<iter>") without escaping.
var idGrammar = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// FieldError is a refused input: the field that was wrong and why, so the
// API and the CLI can say exactly what to fix.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func refuseField(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ValidateCase checks a case's material before it is stored: the seed's
// validateCaseMaterial (id, title, statement and rubric non-empty after
// trimming) plus mull's grammar and length limits. Title and capability
// count too: both are shown to people and the capability to the judge's
// records. State and times are the store's, not checked here.
func ValidateCase(c Case) error {
	if err := checkName("id", c.ID, true); err != nil {
		return err
	}
	if err := checkName("set", c.Set, false); err != nil {
		return err
	}
	for _, f := range []struct {
		field, text string
		required    bool
		most        int
	}{
		{"title", c.Title, true, MaxTitleRunes},
		{"statement", c.Statement, true, MaxStatementRunes},
		{"rubric", c.Rubric, true, MaxRubricRunes},
		{"capability", c.Capability, false, MaxCapabilityRunes},
	} {
		if err := checkText(f.field, f.text, f.required, f.most); err != nil {
			return err
		}
	}
	return nil
}

// checkName checks an id-like field: the grammar and MaxIDRunes.
func checkName(field, s string, required bool) error {
	switch {
	case s == "" && !required:
		return nil
	case strings.TrimSpace(s) == "":
		return refuseField(field, "must be non-empty")
	case len(s) > MaxIDRunes:
		return refuseField(field, "longer than %d characters (%d)", MaxIDRunes, len(s))
	case !idGrammar.MatchString(s):
		return refuseField(field, "%q may hold only letters, digits, '.', '_' and '-'", s)
	}
	return nil
}

// checkText checks a text field: valid UTF-8, non-empty after trimming
// when required, at most most characters.
func checkText(field, s string, required bool, most int) error {
	switch {
	case !utf8.ValidString(s):
		return refuseField(field, "is not valid UTF-8")
	case required && strings.TrimSpace(s) == "":
		return refuseField(field, "must be non-empty")
	}
	if n := utf8.RuneCountInString(s); n > most {
		return refuseField(field, "longer than %d characters (%d)", most, n)
	}
	return nil
}

// CaseHash is the hash a frozen case's material is known by: sha256 hex
// of the canonical JSON of {id, statement, rubric, capability} (the
// seed's hashBenchmarkCase). Title, set and times are not material: a
// case's hash changes only when what the executor and the judge read
// changes. The capability is left out when empty, as the seed leaves an
// undefined one out, so a case without one hashes as in the seed.
func CaseHash(c Case) string {
	m := map[string]string{"id": c.ID, "statement": c.Statement, "rubric": c.Rubric}
	if c.Capability != "" {
		m["capability"] = c.Capability
	}
	s, err := canonicalJSON(m)
	if err != nil {
		// A map of strings always marshals.
		panic(err)
	}
	return sha256Hex(s)
}
