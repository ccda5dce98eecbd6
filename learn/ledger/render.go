package ledger

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/trust"
)

// shownMax is how many preconditions a digest line names before "and N
// more", and hashMax how much of a hash it shows.
const (
	shownMax = 3
	hashMax  = 12
)

// Constrains says whether fact f is still a constraint at time at, one
// the digest's Known failures block ("do not do this") may show: not once
// its retry condition allows a retry (a command's cooldown has passed, an
// after branch of anyOf is due). The ledger's check then answers
// verify-retry, so the prompt must not say the opposite. A fact with no
// retry condition, or never/manual, stays one until its evidence changes
// or a person resolves it. The caller has already asked Intercepts and
// whether a stale fact's evidence is back.
func Constrains(f Fact, at time.Time) bool {
	return RetryVerdict(f.Retry, at) != VerdictAllow
}

// ConstraintLines are fact f as a constraint of the digest's Known
// failures block at time at, in the lesson blocks' item shape (a first
// line opening with "- ", then labelled lines opening with two spaces):
//
//   - command exited 1 (bash) [npm install]
//     why: exit code 1 (no dependency evidence)
//     retry: at 2026-12-01T12:05:00Z
//
// why sums up the evidence: the exit or error code, and the preconditions
// it was recorded under; retry says when a retry is legitimate: "at T",
// "when <file> changes" (or "appears"), "never", "by a person (mull
// ledger resolve)", and "or when … changes" for a fact with preconditions
// (a changed precondition always allows a retry). Every line goes through
// the render-time gate (trust.Line) and has its braces escaped for DSH's
// template engine, as lessons do; a fact with any line the gate refuses is
// hidden whole: ok false.
func ConstraintLines(f Fact, at time.Time) (lines []string, ok bool) {
	head := f.Claim
	if f.Kind == CommandFailed && strings.TrimSpace(f.Preview) != "" {
		head += " [" + f.Preview + "]"
	}
	for _, l := range []struct{ label, body string }{
		{"- ", head}, {"  why: ", why(f)}, {"  retry: ", retryText(f, at)},
	} {
		g, ok := gateLine(l.body)
		if !ok || g == "" {
			return nil, false
		}
		lines = append(lines, l.label+g)
	}
	return lines, true
}

// gateLine is one text as the digest shows it: trust.Line, then braces
// made full-width so DSH's template engine never reads "{{" (the digest's
// and the lesson blocks' escape).
func gateLine(s string) (string, bool) {
	l, ok := lineKeepingCuts(s)
	if !ok {
		return "", false
	}
	return braceEscape.Replace(l), true
}

// lineKeepingCuts is trust.Line keeping the ellipsis mull puts where it
// cut a text (NFKC would turn "…" into "..."): each cut is gated without
// it and the "…" put back.
func lineKeepingCuts(s string) (string, bool) {
	if !strings.Contains(s, ellipsis) {
		return trust.Line(s)
	}
	parts := strings.Split(s, ellipsis)
	for i, p := range parts {
		if p == "" {
			continue
		}
		l, ok := trust.Line(p)
		if !ok {
			return "", false
		}
		// trust.Line trims; keep the spaces around a cut.
		parts[i] = leading(p) + l + trailing(p)
	}
	if v := trust.Check(s); v.Quarantined { // an instruction split across a cut
		return "", false
	}
	return strings.TrimSpace(strings.Join(parts, ellipsis)), true
}

func leading(s string) string  { return s[:len(s)-len(strings.TrimLeft(s, " "))] }
func trailing(s string) string { return s[len(strings.TrimRight(s, " ")):] }

var braceEscape = strings.NewReplacer("{", "｛", "}", "｝")

// why is the evidence summary: the outcomes, then the preconditions.
func why(f Fact) string {
	var outs, pres []string
	for _, w := range f.Evidence {
		switch w.Kind {
		case WitnessCommandExit:
			if w.ExitCode != nil {
				outs = appendNew(outs, fmt.Sprintf("exit code %d", *w.ExitCode))
			}
		case WitnessErrorCode:
			outs = appendNew(outs, "error "+w.Code)
		default:
			if w.Role == Precondition {
				pres = appendNew(pres, preconditionText(w))
			}
		}
	}
	if f.Kind == FileMissing && absentOnly(f.Evidence) && len(pres) > 0 {
		pres = []string{f.Fingerprint.Path + " was absent"} // one file under its several keys
	}
	s := strings.Join(outs, ", ")
	switch {
	case len(pres) > 0:
		s += " while " + listed(pres)
	case f.Kind == CommandFailed:
		s += " (no dependency evidence)"
	}
	return s
}

func preconditionText(w Witness) string {
	switch w.Kind {
	case WitnessFileState:
		if w.Observed == Present {
			return DisplayKey(w.Path) + " was at version " + short(w.Version)
		}
		return DisplayKey(w.Path) + " was absent"
	case WitnessFileContent:
		return "the content of " + DisplayKey(w.Path) + " hashed " + short(w.Hash)
	case WitnessDirectoryListing:
		return "the listing of " + DisplayKey(w.Path) + " hashed " + short(w.Hash)
	case WitnessEnvState:
		return "env " + w.Key + " hashed " + short(w.Hash)
	case WitnessRepoState:
		return "repo " + w.Root + " was at " + short(w.Hash)
	}
	return w.Kind
}

// retryText says when a retry is legitimate.
func retryText(f Fact, at time.Time) string {
	var subjects []string
	for _, w := range f.Evidence {
		if w.Role == Precondition {
			subjects = appendNew(subjects, subjectOf(w))
		}
	}
	changes := ""
	switch {
	case len(subjects) == 0:
	case f.Kind == FileMissing && absentOnly(f.Evidence):
		changes = "when " + f.Fingerprint.Path + " appears"
	case len(subjects) == 1:
		changes = "when " + subjects[0] + " changes"
	default:
		changes = "when " + listed(subjects) + " change"
	}
	if f.Retry == nil {
		return cmp.Or(changes, "when its evidence changes")
	}
	s := conditionText(*f.Retry, at)
	if changes != "" {
		s += ", or " + changes
	}
	return s
}

func conditionText(c RetryCondition, at time.Time) string {
	switch c.Type {
	case RetryNever:
		return "never"
	case RetryManual:
		return "by a person (mull ledger resolve)"
	case RetryAfter:
		if !at.Before(c.At) {
			return "now (since " + Stamp(c.At) + ")"
		}
		return "at " + Stamp(c.At)
	case RetryAnyOf:
		var parts []string
		for _, b := range c.Conditions {
			parts = appendNew(parts, conditionText(b, at))
		}
		return strings.Join(parts, " or ")
	}
	return "never" // unknown: RetryVerdict blocks it
}

// absentOnly: every precondition is a file-state absent (a missing file's
// keys).
func absentOnly(evidence []Witness) bool {
	for _, w := range evidence {
		if w.Role == Precondition && (w.Kind != WitnessFileState || w.Observed != Absent) {
			return false
		}
	}
	return true
}

func subjectOf(w Witness) string {
	switch w.Kind {
	case WitnessEnvState:
		return "env " + w.Key
	case WitnessRepoState:
		return "repo " + w.Root
	}
	return DisplayKey(w.Path)
}

// listed joins at most shownMax items, then "and N more".
func listed(items []string) string {
	if len(items) <= shownMax {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:shownMax], ", ") + fmt.Sprintf(" and %d more", len(items)-shownMax)
}

func short(h string) string { return cut(h, hashMax) }

func appendNew(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}
