package store

import (
	"fmt"
	"slices"
	"strings"
)

// Who did something a person or an agent may do, one vocabulary for every
// record of it: a proposal's decider (Proposal.DecidedBy) and a memory's
// last verifier (Memory.VerifiedBy). A person holds the admin token and
// acts through the panel, the admin API or the CLI; an agent acts through
// the bridge's routes, on its API token (a human's slash command or an
// agent's own call: mull cannot tell them apart).
const (
	ActorPanel = "admin (panel)"
	ActorAPI   = "admin (api)"
	ActorCLI   = "admin (cli)"
	ActorAgent = "agent"
)

// Actors lists the actors, for messages and checks.
func Actors() []string { return []string{ActorPanel, ActorAPI, ActorCLI, ActorAgent} }

// VerifiedByMerge is a consolidation merge's VerifiedBy when the verified
// time it carries is its newest source's record time, not anyone's
// verification (learn/memory.VerifiedByMerge, the same text: learn does
// not import store).
const VerifiedByMerge = "consolidation (a source's record time)"

// CheckActor refuses a blank or unknown actor: what is done (e.g. "verify
// memory 3") names the refused act in the error.
func CheckActor(what, by string) error {
	switch {
	case strings.TrimSpace(by) == "":
		return fmt.Errorf("%s: no actor: say who does it (one of %s)", what, quoted(Actors()))
	case !slices.Contains(Actors(), by):
		return fmt.Errorf("%s: %q is not an actor: want one of %s", what, by, quoted(Actors()))
	}
	return nil
}

// checkVerifier refuses a stored memory's verifier that is neither an
// actor, VerifiedByMerge nor empty (not recorded), and one without a
// verified time.
func checkVerifier(m Memory) error {
	switch {
	case m.VerifiedBy == "":
		return nil
	case m.VerifiedAt.IsZero():
		return fmt.Errorf("verified by %q but never verified (no verified time)", m.VerifiedBy)
	case m.VerifiedBy == VerifiedByMerge:
		return nil
	}
	return CheckActor("verifier", m.VerifiedBy)
}

func quoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
