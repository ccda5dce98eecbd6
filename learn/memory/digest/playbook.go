package digest

import (
	"cmp"
	"slices"
	"time"
)

// Playbook is a reusable procedure (SOP) the retro job wrote, with its
// track record.
type Playbook struct {
	Slug string
	// Summary is a short summary of its steps.
	Summary                string
	Uses, Successes, Fails int
	// VerifiedAt is the last successful use; zero when none succeeded.
	VerifiedAt time.Time
	// WrittenAt is when a retro wrote its steps: a playbook never verified
	// ages from it, so a new one starts fresh.
	WrittenAt time.Time
}

// PlaybookStaleAfter: a playbook unverified for longer is marked stale.
const PlaybookStaleAfter = 30 * 24 * time.Hour

// Rate is the seed's success rate with a confidence correction,
// (successes+1)/(uses+2): one success out of one use does not beat nine out
// of ten.
func (p Playbook) Rate() float64 { return float64(p.Successes+1) / float64(p.Uses+2) }

// Stale reports a playbook unverified for more than 30 days: since its
// last success, or since it was written when it never succeeded. One with
// neither time is stale: its age is unknown.
func (p Playbook) Stale(now time.Time) bool {
	since := p.VerifiedAt
	if since.IsZero() {
		since = p.WrittenAt
	}
	return since.IsZero() || now.Sub(since) > PlaybookStaleAfter
}

// SortPlaybooks orders playbooks as the seed does: fresh before stale, then
// by rate, then by uses; then by slug, so the order is total.
func SortPlaybooks(ps []Playbook, now time.Time) {
	slices.SortStableFunc(ps, func(a, b Playbook) int {
		return cmp.Or(
			cmpBool(a.Stale(now), b.Stale(now)),
			cmp.Compare(b.Rate(), a.Rate()),
			cmp.Compare(b.Uses, a.Uses),
			cmp.Compare(a.Slug, b.Slug),
		)
	})
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
