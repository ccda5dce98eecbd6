package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// DedupeMax is how many (session, fact) warnings one session remembers,
// the seed's 256: a session repeating more distinct failures than this
// forgets its oldest.
const DedupeMax = 256

// WarnMemo is what the ledger remembers of a session's last warning for
// one fact.
type WarnMemo struct {
	// Found: the session was warned about this fact and it is remembered.
	Found bool
	// WarnedAt is when.
	WarnedAt time.Time
	// Evidence is EvidenceDigest of the fact's evidence at that warning;
	// "" when not kept (then only time decides).
	Evidence string
	// Entries is how many facts the session has warnings remembered for.
	Entries int
}

// WarnDecision is what to do with a repeat failure's warning.
type WarnDecision struct {
	// Warn: attach the note and count warnings_emitted. A repeat that is
	// not warned still counts as a duplicate failure.
	Warn bool
	// Remember: store (or refresh) the (session, fact) entry at now.
	Remember bool
	// EvictOldest: the session is full (DedupeMax): drop its oldest entry
	// first, so it never holds more than DedupeMax.
	EvictOldest bool
}

// WarnDedupe is the newer seed's warningRepeatAfterMs rule: a session is
// warned about one fact again only when the last warning is at least
// repeatAfter old, or the failure's evidence changed since (evidence is
// EvidenceDigest of the fact's evidence now). repeatAfter 0 turns the
// dedupe off: every repeat warns and nothing is remembered. A legitimate
// verification retry re-allows a warning too: the service forgets the
// session's entry for the fact when it grants the fact's lease.
func WarnDedupe(m WarnMemo, evidence string, now time.Time, repeatAfter time.Duration) WarnDecision {
	if repeatAfter <= 0 {
		return WarnDecision{Warn: true}
	}
	changed := m.Evidence != "" && evidence != "" && m.Evidence != evidence
	if m.Found && now.Sub(m.WarnedAt) < repeatAfter && !changed {
		return WarnDecision{}
	}
	return WarnDecision{Warn: true, Remember: true, EvictOldest: !m.Found && m.Entries >= DedupeMax}
}

// EvidenceDigest is a fact's evidence as WarnDedupe compares it: a hash
// of every witness except the stderr signature (stderr carries times and
// ids that differ on every run of the same failure; an exit code, an
// error code or a precondition changing is a different failure).
func EvidenceDigest(evidence []Witness) string {
	ws := make([]Witness, len(evidence))
	for i, w := range evidence {
		w.StderrSignature = ""
		ws[i] = w
	}
	b, _ := json.Marshal(ws) // plain structs always encode
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
