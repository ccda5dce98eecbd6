package memories

import (
	"context"
	"database/sql"
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
// before stale, then by rate, then by uses.
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
	out := make([]Playbook, len(ranked))
	for i, d := range ranked {
		out[i] = playbookView(bySlug[d.Slug], now)
	}
	return out, nil
}

// UsePlaybook records that the agent followed a playbook and whether it
// worked: a success verifies it now. An unknown slug wraps
// store.ErrNotFound.
func (s *Service) UsePlaybook(ctx context.Context, workspace, slug string, success bool) (Playbook, error) {
	now := s.store.Now()
	var row store.Playbook
	err := s.store.InTx(ctx, func(tx *sql.Tx) (err error) {
		row, err = s.store.UsePlaybook(ctx, tx, workspace, slug, success, now)
		return err
	})
	if err != nil {
		return Playbook{}, err
	}
	return playbookView(row, now), nil
}

// digestPlaybook is a stored playbook as the digest ranks and renders it.
func digestPlaybook(b store.Playbook) digest.Playbook {
	return digest.Playbook{Slug: b.Slug, Summary: strings.Join(b.Steps, " → "),
		Uses: b.Uses, Successes: b.Successes, Fails: b.Fails, VerifiedAt: b.VerifiedAt, WrittenAt: b.UpdatedAt}
}

func playbookView(b store.Playbook, now time.Time) Playbook {
	d := digestPlaybook(b)
	p := Playbook{Workspace: b.Workspace, Slug: b.Slug, Steps: b.Steps, Uses: b.Uses, Successes: b.Successes,
		Fails: b.Fails, Rate: d.Rate(), Stale: d.Stale(now), UpdatedAt: b.UpdatedAt}
	if p.Steps == nil {
		p.Steps = []string{}
	}
	if !b.VerifiedAt.IsZero() {
		v := b.VerifiedAt
		p.VerifiedAt = &v
	}
	return p
}
