package ledger

import "fmt"

// The effects of an observed outcome on the ledger (the same strings as
// negledger's Effect constants).
const (
	EffectRecorded = "recorded" // a new fact
	EffectEvidence = "evidence" // a new evidence version of the current fact
	EffectResolved = "resolved" // the current fact is resolved
	EffectReleased = "released" // the lease is dropped, the fact unchanged
	EffectNone     = "none"
)

// The notes an observed outcome may carry back to the agent.
const (
	// NoteWarn: WarnNote, in warn mode only, subject to WarnDedupe.
	NoteWarn = "warn"
	// NoteStale: StaleNote; the fact no longer applied.
	NoteStale = "stale"
)

// Observed is what a call that ran did, as Observe decides it.
type Observed struct {
	// Holder: the call holds the fact's lease (its lease_id matches).
	Holder bool
	// LeasedByOther: another call holds the fact's active lease. Only the
	// holder settles a leased fact; any other call only observes.
	LeasedByOther bool
	// Class is what the result proves (Classify).
	Class Class
	// Current is the current fact of the call's fingerprint (resolved
	// included), nil for none.
	Current *Fact
	// Verdict is Current's verdict now (VerdictFor), when it intercepts.
	Verdict Verdict
}

// ObserveStep is what Observe does to the ledger.
type ObserveStep struct {
	Effect string
	// Duplicate: the call repeated a failure the fact already warned or
	// blocked for: duplicate_failures_observed+1.
	Duplicate bool
	// Supersede: Effect is recorded and Current (resolved) becomes
	// superseded by the new fact.
	Supersede bool
	// Note is NoteWarn, NoteStale or "".
	Note string
	// ForgetWarning: a verification retry settled the fact: the (session,
	// fact) warning entries are forgotten, so a later repeat warns again.
	ForgetWarning bool
}

// Observe is the contract's Observe table (the seed's postExecute):
//   - mode off, or a result that proves nothing: none (a holder's lease
//     is released);
//   - the lease holder: success → resolved; failure → a new evidence
//     version (status active, a new after for commands);
//   - another call holds the lease: none (only the holder settles);
//   - no lease, a failure, and a current fact that intercepts → a new
//     evidence version; a warn or block verdict (the repeat the fact
//     predicted) counts a duplicate failure and, in warn mode, a warning
//     note; a stale-allow verdict gives the stale note;
//   - no lease, a failure, no current fact or a resolved one → a new fact,
//     superseding the resolved one;
//   - no lease, a success, a current fact that intercepts → resolved (and
//     the stale note when its verdict was stale-allow).
func Observe(mode Mode, o Observed) ObserveStep {
	failure := o.Class == ClassCommandFailure || o.Class == ClassFileMissing
	intercepts := o.Current != nil && Intercepts(*o.Current)
	switch {
	case mode == ModeOff:
		return ObserveStep{Effect: EffectNone}
	case o.Holder && o.Class == ClassSuccess:
		return ObserveStep{Effect: EffectResolved, ForgetWarning: true}
	case o.Holder && failure:
		return ObserveStep{Effect: EffectEvidence, ForgetWarning: true}
	case o.Holder:
		return ObserveStep{Effect: EffectReleased}
	case o.LeasedByOther || (!failure && o.Class != ClassSuccess):
		return ObserveStep{Effect: EffectNone}
	case failure && !intercepts:
		return ObserveStep{Effect: EffectRecorded, Supersede: o.Current != nil}
	case failure:
		s := ObserveStep{Effect: EffectEvidence}
		switch o.Verdict {
		case VerdictWarn, VerdictBlock:
			s.Duplicate = true
			if mode == ModeWarn {
				s.Note = NoteWarn
			}
		case VerdictStaleAllow:
			s.Note = NoteStale
		}
		return s
	case intercepts:
		s := ObserveStep{Effect: EffectResolved}
		if o.Verdict == VerdictStaleAllow {
			s.Note = NoteStale
		}
		return s
	}
	return ObserveStep{Effect: EffectNone}
}

// String is the step for logs and test failures.
func (s ObserveStep) String() string {
	return fmt.Sprintf("%s dup=%v supersede=%v note=%q forget=%v", s.Effect, s.Duplicate, s.Supersede, s.Note, s.ForgetWarning)
}
