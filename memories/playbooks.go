package memories

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/memory/digest"
	"github.com/mullhq/mull/store"
)

// Playbook is a workspace's reusable procedure with its track record, as
// the agent and people see it: the seed's front matter (uses, successes,
// fails, verified_at) plus the rate and staleness the digest ranks it by.
type Playbook struct {
	Workspace string   `json:"workspace"`
	Slug      string   `json:"slug"`
	Steps     []string `json:"steps"`
	Uses      int      `json:"uses"`
	Successes int      `json:"successes"`
	Fails     int      `json:"fails"`
	// Rate is (successes+1)/(uses+2): one success in one use does not beat
	// nine in ten.
	Rate float64 `json:"rate"`
	// Stale: unverified for 30 days, counted from the last success, or
	// from the last retro's writing when it never succeeded.
	Stale bool `json:"stale"`
	// VerifiedAt is the last successful use; null when none succeeded.
	VerifiedAt *time.Time `json:"verified_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
}

// Playbooks lists a workspace's playbooks in the digest's order: fresh
// before stale, then by rate, then by uses. Each passes the render-time
// gate (trust.Line on its slug and every step); one it hides is left out.
func (s *Service) Playbooks(ctx context.Context, workspace string) ([]Playbook, error) {
	rows, err := s.store.ListPlaybooks(ctx, s.store.DB, workspace)
	if err != nil {
		return nil, err
	}
	now := s.store.Now()
	ranked := make([]digest.Playbook, len(rows))
	bySlug := make(map[string]store.Playbook, len(rows))
	for i, r := range rows {
		ranked[i], bySlug[r.Slug] = digestPlaybook(r), r
	}
	digest.SortPlaybooks(ranked, now)
	out := make([]Playbook, 0, len(ranked))
	for _, d := range ranked {
		if p, ok := playbookView(bySlug[d.Slug], now); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// UsePlaybook records that the agent followed a playbook (use.Workspace,
// use.Slug) and whether it worked (use.Success), with who reported it and
// the session when known: a success verifies it now. The use is logged
// with the totals it moves. An unknown slug, or one the render-time gate
// hides, wraps store.ErrNotFound (nothing is recorded).
func (s *Service) UsePlaybook(ctx context.Context, use store.PlaybookUse) (Playbook, error) {
	workspace, slug := use.Workspace, use.Slug
	now := s.store.Now()
	use.At = now
	var row store.Playbook
	var view Playbook
	err := s.store.InTx(ctx, func(tx *sql.Tx) (err error) {
		row, err = s.store.UsePlaybook(ctx, tx, use)
		if err != nil {
			return err
		}
		var ok bool
		if view, ok = playbookView(row, now); !ok {
			// Hidden from the agent: it cannot use what it is not shown.
			return fmt.Errorf("playbook %s of %q: %w", slug, workspace, store.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return Playbook{}, err
	}
	return view, nil
}

// digestPlaybook is a stored playbook as the digest ranks and renders it.
func digestPlaybook(b store.Playbook) digest.Playbook {
	return digest.Playbook{Slug: b.Slug, Summary: strings.Join(b.Steps, " → "),
		Uses: b.Uses, Successes: b.Successes, Fails: b.Fails, VerifiedAt: b.VerifiedAt, WrittenAt: b.UpdatedAt}
}

// playbookView is a stored playbook as served, through the render-time
// gate: ok is false when its slug or a step must not be shown.
func playbookView(b store.Playbook, now time.Time) (Playbook, bool) {
	if _, ok := served(b.Slug); !ok {
		return Playbook{}, false
	}
	steps := make([]string, 0, len(b.Steps))
	for _, st := range b.Steps {
		line, ok := served(st)
		if !ok {
			return Playbook{}, false
		}
		steps = append(steps, line)
	}
	d := digestPlaybook(b)
	p := Playbook{Workspace: b.Workspace, Slug: b.Slug, Steps: steps, Uses: b.Uses, Successes: b.Successes,
		Fails: b.Fails, Rate: d.Rate(), Stale: d.Stale(now), UpdatedAt: b.UpdatedAt}
	if !b.VerifiedAt.IsZero() {
		v := b.VerifiedAt
		p.VerifiedAt = &v
	}
	return p, true
}
