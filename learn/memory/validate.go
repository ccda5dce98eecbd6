package memory

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mullhq/mull/events"
)

// Limits on one memory.
const (
	// MinTextRunes: two runes still carry meaning in Chinese ("中文").
	MinTextRunes = 2
	// MaxTextRunes is the smallest default section quota (hypotheses, 400),
	// so any one memory fits whole in any section.
	MaxTextRunes = 400
	// MaxTTLDays bounds an explicit TTL.
	MaxTTLDays = 3650
	maxIDLen   = 256
)

// FieldError names what is wrong with a memory: the field (its JSON name)
// and the problem.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// CheckLine checks one line of text of an answer or a request (an LLM
// output's entry, a handoff line, a step): valid UTF-8, present, one line,
// and within [lo, hi] runes once trimmed. It reports the problem as a
// *FieldError naming field.
func CheckLine(field, s string, lo, hi int) error {
	bad := func(format string, args ...any) error {
		return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	t := strings.TrimSpace(s)
	n := utf8.RuneCountInString(t)
	if problem := controlProblem(s); problem != "" {
		return bad("%s", problem)
	}
	switch {
	case t == "":
		return bad("required")
	case strings.ContainsAny(t, "\n\r\v\f\u0085\u2028\u2029"):
		return bad("must be one line")
	case n < lo:
		return bad("shorter than %d characters", lo)
	case n > hi:
		return bad("longer than %d characters", hi)
	}
	return nil
}

// CheckWrite checks a write's bytes as they came, before anything
// normalizes them: strings.Map and friends turn invalid UTF-8 into U+FFFD
// without a word, and what was sent must be refused, not silently changed.
func CheckWrite(w Write) error {
	for _, f := range []struct{ name, v string }{{"workspace", w.Workspace}, {"text", w.Text}, {"session_id", w.SessionID}} {
		if problem := controlProblem(f.v); problem != "" {
			return &FieldError{Field: f.name, Problem: problem}
		}
	}
	return nil
}

// Validate checks a memory about to be written and reports the first bad
// field. Enums are closed: an unknown kind, src or origin is refused, never
// silently mapped to a default.
func Validate(m Memory) error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	text := strings.TrimSpace(m.Text)
	for _, f := range []struct {
		name, v string
		max     int
	}{{"workspace", m.Workspace, events.MaxPath}, {"session_id", m.SessionID, maxIDLen}} {
		if problem := events.CheckName(f.v, f.max); problem != "" {
			return bad(f.name, "%s", problem)
		}
	}
	if problem := controlProblem(m.Text); problem != "" {
		return bad("text", "%s", problem)
	}
	switch {
	case m.Workspace != "" && !path.IsAbs(m.Workspace) && !isWindowsAbs(m.Workspace):
		return bad("workspace", "%q is not an absolute path (\"\" is the global library)", m.Workspace)
	case m.Kind == "":
		return bad("kind", "required")
	case (m.Kind == Directive || m.Kind == Failure) && m.Lesson == nil:
		// Not in Kinds (the remember tool's list): only a structured
		// lesson, with its fields, is a directive or a failure.
		return bad("kind", "a %s is a structured lesson: it needs its fields (problem, %s)", m.Kind, map[Kind]string{Directive: "correction", Failure: "avoid"}[m.Kind])
	case !knownKind(m.Kind) && !m.Kind.Structured():
		return bad("kind", "%q is not one of %s", m.Kind, list(Kinds))
	case m.Kind.SleepTime() && (m.Origin == OriginTool || m.Origin == OriginRetro):
		return bad("kind", "%s is written by sleep-time consolidation or a human, not by origin %s", m.Kind, m.Origin)
	case text == "":
		return bad("text", "required")
	case utf8.RuneCountInString(text) < MinTextRunes:
		return bad("text", "shorter than %d characters", MinTextRunes)
	case utf8.RuneCountInString(text) > MaxTextRunes:
		return bad("text", "longer than %d characters; one memory is one short statement", MaxTextRunes)
	case m.Importance != 0 && (m.Importance < 1 || m.Importance > 10):
		return bad("importance", "must be between 1 and 10 (or 0 for the kind's default), got %d", m.Importance)
	case m.Src != "" && !knownSrc(m.Src):
		return bad("src", "%q is not one of user, agent, web, tool, doc", m.Src)
	case m.Origin == "":
		return bad("origin", "required (mull sets it from the write path)")
	case !knownOrigin(m.Origin):
		return bad("origin", "%q is not one of tool, command, retro, sleep, panel, import", m.Origin)
	case m.Uses < 0:
		return bad("uses", "must not be negative")
	case len(m.SessionID) > maxIDLen:
		return bad("session_id", "longer than %d bytes", maxIDLen)
	case m.TTLDays < NeverStale || m.TTLDays > MaxTTLDays:
		return bad("ttl_days", "must be between %d (never stale) and %d, got %d", NeverStale, MaxTTLDays, m.TTLDays)
	}
	return nil
}

// controlProblem refuses what a one-line text must not hold: invalid
// UTF-8, NUL (PostgreSQL refuses it, SQLite would keep it raw) and any other
// control character but the tab (a terminal escape in a prompt line). Line
// breaks are the callers' rule: OneLine flattens them, CheckLine refuses them.
func controlProblem(s string) string {
	if problem := events.CheckText(s, 0); problem != "" {
		return problem
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' && !isLineBreak(r) {
			return fmt.Sprintf("contains the control character %U", r)
		}
	}
	return ""
}

func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\u0085':
		return true
	}
	return false
}

func knownKind(k Kind) bool {
	for _, x := range Kinds {
		if k == x {
			return true
		}
	}
	return false
}

func knownSrc(s Src) bool {
	switch s {
	case SrcUser, SrcAgent, SrcWeb, SrcTool, SrcDoc:
		return true
	}
	return false
}

func knownOrigin(o Origin) bool {
	switch o {
	case OriginTool, OriginCommand, OriginRetro, OriginSleep, OriginPanel, OriginImport:
		return true
	}
	return false
}

func list(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func isWindowsAbs(p string) bool {
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}
