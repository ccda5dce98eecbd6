package ledger

import (
	"strings"
	"time"
)

// DenyPrefix opens every reason the ledger denies a call with (the seed's):
// the plugin recognises a call it denied by it in post-execute and never
// counts it twice.
const DenyPrefix = "blocked by negative-ledger"

// UnavailableReason is the seed's fail-closed deny when the ledger cannot
// be reached or cannot decide (block mode only; warn mode proceeds).
const UnavailableReason = DenyPrefix + ": store unavailable (fail-closed)"

// IsDenial says whether a tool error message is one of the ledger's denies.
func IsDenial(message string) bool { return strings.HasPrefix(message, DenyPrefix) }

// The seed's note lines (plugin.ts), verbatim.
const (
	notePrefix    = "Negative-ledger: "
	warnUnchanged = notePrefix + "this exact action previously failed and its evidence is unchanged."
	warnAdvice    = "A retry will likely fail the same way; prefer a different approach."
	staleHead     = notePrefix + "a previous failure no longer applies because its evidence changed; a retry is allowed."
	claimLine     = "- claim: "
	previewLine   = "- action preview: "
)

// Basis is what a fact's verdict rests on, for the notes' wording: the
// newer seed no longer calls missing evidence "evidence unchanged".
type Basis struct {
	// Cooldown: the fact has no precondition evidence (a command with no
	// declared dependency observed in time) and a retry time: it stands
	// on its cooldown only.
	Cooldown bool
	// RetryAt is when its retry condition next allows a retry, if known.
	RetryAt *time.Time
	// Unknown are its precondition kinds with no current value: the
	// verdict stays conservative (unknown = unchanged), and the note says
	// the evidence is incomplete.
	Unknown []string
}

// BasisOf is the basis of fact f given the current preconditions now.
func BasisOf(f Fact, now []Witness) Basis {
	b := Basis{RetryAt: RetryAt(f.Retry), Unknown: Unknown(f.Evidence, now)}
	pre := false
	for _, w := range f.Evidence {
		pre = pre || w.Role == Precondition
	}
	b.Cooldown = !pre && b.RetryAt != nil
	if f.Kind == FileMissing && absentOnly(f.Evidence) && len(b.Unknown) > 0 {
		// One file under its several keys: known when any key is.
		var keys []Witness
		for _, w := range f.Evidence {
			if w.Role == Precondition {
				keys = append(keys, w)
			}
		}
		if knownAny(keys, now) {
			b.Unknown = nil
		}
	}
	return b
}

// knownAny: now holds a current value for one of the witnesses.
func knownAny(ws, now []Witness) bool {
	for _, w := range ws {
		if len(Unknown([]Witness{w}, now)) == 0 {
			return true
		}
	}
	return false
}

// WarnNote is the note a repeat failure gets in warn mode, the seed's
// warnMessage without its "Ledger totals" line (the newer seed: warnings
// no longer carry totals; `mull ledger stats` shows them). Its first line
// says what the warning rests on: the seed's "evidence is unchanged" when
// the fact's preconditions are known and unchanged; "no dependency
// evidence: cooldown only, retry allowed at T" for a fact with none; the
// evidence marked incomplete when a precondition's current value is
// unknown.
func WarnNote(f Fact, b Basis) string {
	head := warnUnchanged
	switch {
	case b.Cooldown:
		head = notePrefix + "this exact action previously failed; " + cooldown(*b.RetryAt) + "."
	case len(b.Unknown) > 0:
		head = notePrefix + "this exact action previously failed; its evidence is incomplete (" +
			unknownPhrase(b.Unknown) + "), so the conservative verdict stands."
	}
	return head + "\n" + factLines(f) + warnAdvice
}

// StaleNote is the seed's staleNote: the fact no longer applies because
// its evidence changed (the note after a stale-allow retry). Verbatim,
// trailing newline included.
func StaleNote(f Fact) string {
	return staleHead + "\n" + factLines(f)
}

// InProgressNote is the seed's inProgressMessage, the advice a call that
// lost the lease competition gets in warn mode.
func InProgressNote(owner string, expires time.Time) string {
	return notePrefix + "another agent is verifying this path (owner " + shownOwner(owner) +
		" until " + Stamp(expires) + "); wait for its result."
}

// InProgressReason is the seed's deny for a call that lost the lease
// competition in block mode.
func InProgressReason(owner string, expires time.Time) string {
	return DenyPrefix + ": verification retry already in progress by " + shownOwner(owner) +
		" (until " + Stamp(expires) + ")"
}

// DenyReason is the seed's denyReason for a block-mode deny of fact f
// whose verdict is v: `blocked by negative-ledger (kind): claim [preview]
// — retry condition not met` (block) or `— evidence unchanged` (warn),
// then mull's " (retry allowed at T)" when the retry time is known (for a
// cooldown-only fact: " (no dependency evidence: cooldown only, retry
// allowed at T)"), and for unknown current evidence " (evidence
// incomplete: …)".
func DenyReason(f Fact, v Verdict, b Basis) string {
	s := DenyPrefix + " (" + string(f.Kind) + "): " + shownClaim(f.Claim)
	if p := shown(f.Preview); p != "" && f.Kind == CommandFailed {
		s += " [" + p + "]"
	}
	if v == VerdictWarn {
		s += " — evidence unchanged"
	} else {
		s += " — retry condition not met"
	}
	switch {
	case b.Cooldown:
		s += " (" + cooldown(*b.RetryAt) + ")"
	case b.RetryAt != nil:
		s += " (retry allowed at " + Stamp(*b.RetryAt) + ")"
	}
	if len(b.Unknown) > 0 && !b.Cooldown {
		s += " (evidence incomplete: " + unknownPhrase(b.Unknown) + ")"
	}
	return s
}

// Stamp is how the ledger's texts write a time: RFC 3339 in UTC.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func cooldown(at time.Time) string {
	return "no dependency evidence: cooldown only, retry allowed at " + Stamp(at)
}

func unknownPhrase(kinds []string) string {
	return "current " + strings.Join(kinds, ", ") + " unknown"
}

// factLines are the seed's "- claim:" and, for a command, "- action
// preview:" lines, each ending in a newline.
func factLines(f Fact) string {
	s := claimLine + shownClaim(f.Claim) + "\n"
	if p := shown(f.Preview); p != "" && f.Kind == CommandFailed {
		s += previewLine + p + "\n"
	}
	return s
}

// shown is a stored text through the render-time gate as one line, ""
// when the gate refuses it: a store written by an older mull, or by hand,
// may hold anything.
func shown(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	l, ok := lineKeepingCuts(s)
	if !ok {
		return ""
	}
	return l
}

func shownClaim(claim string) string {
	if c := shown(claim); c != "" {
		return c
	}
	return "(claim withheld by the trust gate)"
}

// shownOwner is a lease owner (a tool call id, sent by a client) as
// shown: gated and at most PreviewMax runes.
func shownOwner(owner string) string {
	if o := shown(Sanitize(owner)); o != "" {
		return cut(o, PreviewMax)
	}
	return "another call"
}
