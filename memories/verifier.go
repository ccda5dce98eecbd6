package memories

import (
	"strings"

	"github.com/mullhq/mull/learn/memory"
)

// Verifier says who made m's last verification as a sentence says it after
// "verified by": "an admin (panel)", "an agent", "someone (not recorded)"
// for a verification made before mull recorded who verifies (the
// verified_by migration), "no one (…)" for a merge that carries its newest source's record
// time (memory.VerifiedByMerge); "" when m was never verified.
func Verifier(m memory.Memory) string {
	switch by := m.VerifiedBy; {
	case m.VerifiedAt.IsZero():
		return ""
	case by == "":
		return "someone (not recorded)"
	case by == memory.VerifiedByMerge:
		return "no one (consolidation kept its newest source's record time)"
	case strings.HasPrefix(by, "admin"), strings.HasPrefix(by, "agent"):
		return "an " + by
	default:
		return by
	}
}
