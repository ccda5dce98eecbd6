package ledger

import (
	"slices"
	"time"
)

// Mismatched are the kinds of the fact evidence's precondition witnesses
// whose current value (in now) positively differs, the seed's
// mismatchedWitnessKinds. A witness with no current value counts as
// unchanged (absent information never invalidates); outcome witnesses
// never count. Each kind is listed once, in evidence order (the seed may
// repeat a kind; once is what Transition.StaleWitnesses needs).
func Mismatched(evidence, now []Witness) []string {
	current := map[string]Witness{}
	for _, w := range now {
		if w.Role == Precondition || w.Role == "" {
			current[witnessKey(w)] = w
		}
	}
	var stale []string
	for _, w := range evidence {
		if w.Role != Precondition {
			continue
		}
		latest, ok := current[witnessKey(w)]
		if !ok || hashOf(w) == hashOf(latest) {
			continue
		}
		if !slices.Contains(stale, w.Kind) {
			stale = append(stale, w.Kind)
		}
	}
	return stale
}

// Unknown are the precondition kinds of evidence that now holds no
// current value for: the verdict stays conservative (unknown =
// unchanged), and the note says the evidence is incomplete.
func Unknown(evidence, now []Witness) []string {
	current := map[string]bool{}
	for _, w := range now {
		current[witnessKey(w)] = true
	}
	var out []string
	for _, w := range evidence {
		if w.Role == Precondition && !current[witnessKey(w)] && !slices.Contains(out, w.Kind) {
			out = append(out, w.Kind)
		}
	}
	return out
}

// witnessKey is what a precondition witness is about: its kind and
// subject (path, env key or repo root).
func witnessKey(w Witness) string {
	switch w.Kind {
	case WitnessEnvState:
		return w.Kind + ":" + w.Key
	case WitnessRepoState:
		return w.Kind + ":" + w.Root
	default:
		return w.Kind + ":" + w.Path
	}
}

// hashOf is a precondition witness's value. A file-state's value is
// "absent" or "present:" + version, so no version can pass for absent.
func hashOf(w Witness) string {
	if w.Kind == WitnessFileState {
		if w.Observed == Present {
			return Present + ":" + w.Version
		}
		return w.Observed
	}
	return w.Hash
}

// RetryVerdict is the seed's retryVerdict, for a fact whose evidence
// still matches: no condition → warn (the fact waits for its evidence to
// change); never or manual → block; after → allow once now ≥ At, else
// block; anyOf → allow when any branch allows, else block. An unknown
// type blocks (fail closed; ValidateRetry keeps them out).
func RetryVerdict(c *RetryCondition, now time.Time) Verdict {
	if c == nil {
		return VerdictWarn
	}
	switch c.Type {
	case RetryAfter:
		if !now.Before(c.At) {
			return VerdictAllow
		}
	case RetryAnyOf:
		for i := range c.Conditions {
			if RetryVerdict(&c.Conditions[i], now) == VerdictAllow {
				return VerdictAllow
			}
		}
	}
	return VerdictBlock
}

// VerdictFor is a fact's verdict for an attempt now: stale-allow with the
// mismatched precondition kinds when one differs, else RetryVerdict. It
// does not look at the fact's status: the caller asks only about a fact
// that intercepts (Intercepts).
func VerdictFor(f Fact, now []Witness, at time.Time) (Verdict, []string) {
	if stale := Mismatched(f.Evidence, now); len(stale) > 0 {
		return VerdictStaleAllow, stale
	}
	return RetryVerdict(f.Retry, at), nil
}

// Intercepts: the fact is the current one of its fingerprint and not
// resolved. A stale fact intercepts again when its original evidence
// returns (the verdict is derived per query); resolved and superseded
// facts never do.
func Intercepts(f Fact) bool {
	return f.Current && (f.Status == Active || f.Status == Stale)
}

// RetryAt is the earliest time an after condition in c allows a retry,
// nil when c has none (no condition, never, manual).
func RetryAt(c *RetryCondition) *time.Time {
	if c == nil {
		return nil
	}
	switch c.Type {
	case RetryAfter:
		at := c.At
		return &at
	case RetryAnyOf:
		var best *time.Time
		for i := range c.Conditions {
			if t := RetryAt(&c.Conditions[i]); t != nil && (best == nil || t.Before(*best)) {
				best = t
			}
		}
		return best
	}
	return nil
}
