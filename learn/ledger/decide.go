package ledger

// Step is what Check does for one call, given the workspace's mode and
// the verdict of the call's current fact (Decide). Exactly one of Answer
// and Compete is set.
type Step struct {
	// Answer is the answer when no lease is involved: allow (mode off, or
	// no fact), warn (warn mode, the fact intercepts) or deny (block mode,
	// the fact intercepts). Empty when Compete.
	Answer Answer
	// Compete: the verdict allows a verification retry (allow or
	// stale-allow); the call competes for the fact's lease. The winner is
	// answered verify-retry, the losers Losing(mode).
	Compete bool
	// CommitStale: the verdict is stale-allow: the fact's stale
	// transition (with the mismatched kinds) is committed first when the
	// fact is still active, so the lease binds the new revision (the
	// seed's read-through invalidation). An already stale fact is left.
	CommitStale bool
	// CountDenied: the answer is a deny before dispatch: calls_denied+1
	// and an event (fact, call, "deny"), once per tool call.
	CountDenied bool
}

// Decide is the contract's Check table:
//   - mode off, or no current fact (v == ""): allow, nothing written;
//   - block or warn verdict: block mode → deny, counted; warn mode →
//     warn, nothing counted (the note comes from Observe if it fails
//     again);
//   - allow or stale-allow: compete for the lease; stale-allow commits
//     the stale transition first.
//
// An unknown mode is treated as block for a fact that intercepts (fail
// closed), and an unknown verdict as block; config validation keeps both
// out.
func Decide(mode Mode, v Verdict) Step {
	if mode == ModeOff || v == "" {
		return Step{Answer: AnswerAllow}
	}
	switch v {
	case VerdictAllow:
		return Step{Compete: true}
	case VerdictStaleAllow:
		return Step{Compete: true, CommitStale: true}
	}
	if mode == ModeWarn {
		return Step{Answer: AnswerWarn}
	}
	return Step{Answer: AnswerDeny, CountDenied: true}
}

// Losing is the answer of a call that lost the lease competition: in
// progress, and whether it is a deny counted in calls_denied. Block mode
// denies it (the plugin denies an in-progress call), warn mode only
// advises it and lets it run.
func Losing(mode Mode) (answer Answer, countDenied bool) {
	return AnswerInProgress, mode != ModeWarn && mode != ModeOff
}

// Denies says whether the plugin refuses to run a call answered a in the
// given mode: deny always, in-progress in block mode.
func Denies(mode Mode, a Answer) bool {
	switch a {
	case AnswerDeny:
		return true
	case AnswerInProgress:
		return mode == ModeBlock
	}
	return false
}
