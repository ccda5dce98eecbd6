package store

import (
	"context"
	"fmt"
	"github.com/mullhq/mull/learn/harness"
	"strconv"
	"strings"
	"time"
)

// The panel's harness reads (web/harness.go): the refinement and review
// lists a page at a time (the service's lists have a limit, no offset),
// and the scopes that hold entries. Read-only.

// PanelRefinementFilter narrows PanelHarnessRefinements; empty fields
// match everything.
type PanelRefinementFilter struct {
	// ScopeKey is "global" or "session:<id>".
	ScopeKey string
	// Source is job, agent or admin.
	Source string
	// Limit defaults to 50 and is capped at 1000; Offset skips rows.
	Limit, Offset int
}

// PanelHarnessRefinements lists refinements newest first, a page at a
// time.
func (s *Store) PanelHarnessRefinements(ctx context.Context, f PanelRefinementFilter) ([]HarnessRefinement, error) {
	where, args := []string{"1 = 1"}, []any{}
	if f.ScopeKey != "" {
		args = append(args, f.ScopeKey)
		where = append(where, "scope_key = $"+strconv.Itoa(len(args)))
	}
	if f.Source != "" {
		args = append(args, f.Source)
		where = append(where, "source = $"+strconv.Itoa(len(args)))
	}
	args = append(args, clampLimit(f.Limit), max(f.Offset, 0))
	out, err := queryAll(ctx, s.DB, scanHarnessRefinement, `select `+harnessRefinementColumns+` from harness_refinements
		where `+strings.Join(where, " and ")+` order by committed_at desc, id desc
		limit $`+strconv.Itoa(len(args)-1)+` offset $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list harness refinements: %w", err)
	}
	return out, nil
}

// PanelReviewFilter narrows PanelHarnessReviews; empty fields match
// everything.
type PanelReviewFilter struct {
	Session string
	// Outcome is declined, assessed, approved or failed.
	Outcome string
	// RefinementID: the reviews that applied (or hold) that refinement.
	RefinementID string
	// Limit defaults to 50 and is capped at 1000; Offset skips rows.
	Limit, Offset int
}

// PanelHarnessReviews lists review verdicts newest first, a page at a
// time.
func (s *Store) PanelHarnessReviews(ctx context.Context, f PanelReviewFilter) ([]HarnessReview, error) {
	where, args := []string{"1 = 1"}, []any{}
	for _, c := range []struct{ col, v string }{{"session_id", f.Session}, {"outcome", f.Outcome}, {"refinement_id", f.RefinementID}} {
		if c.v != "" {
			args = append(args, c.v)
			where = append(where, c.col+" = $"+strconv.Itoa(len(args)))
		}
	}
	args = append(args, clampLimit(f.Limit), max(f.Offset, 0))
	out, err := queryAll(ctx, s.DB, scanHarnessReview, `select `+harnessReviewColumns+` from harness_reviews where `+
		strings.Join(where, " and ")+` order by at desc, id desc
		limit $`+strconv.Itoa(len(args)-1)+` offset $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list harness reviews: %w", err)
	}
	return out, nil
}

// HarnessScopeCount is one scope that holds entries: how many (live,
// tombstones left out) and when one last changed.
type HarnessScopeCount struct {
	ScopeKey  string
	Entries   int
	UpdatedAt time.Time
}

// PanelHarnessScopes lists the scopes that hold live entries, the global
// one first, then the most recently changed, at most limit (default 50,
// at most 1000).
func (s *Store) PanelHarnessScopes(ctx context.Context, limit int) ([]HarnessScopeCount, error) {
	out, err := queryAll(ctx, s.DB, func(r scanner) (HarnessScopeCount, error) {
		var c HarnessScopeCount
		var last any
		if err := r.Scan(&c.ScopeKey, &c.Entries, &last); err != nil {
			return c, err
		}
		var err error
		c.UpdatedAt, err = aggregateTime(last)
		return c, err
	}, `select scope_key, count(*), max(updated_at) from harness_entries where deleted = false
		group by scope_key order by case when scope_key = 'global' then 0 else 1 end, max(updated_at) desc, scope_key
		limit $1`, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list harness scopes: %w", err)
	}
	return out, nil
}

// EntryInjections lists the sessions one entry (of the store scopeKey)
// was injected into, with how often and when last, the latest first: a
// page of limit (defaults to 50, at most 1000) from offset. These are the
// rows an entry's injection count sums.
func (s *Store) EntryInjections(ctx context.Context, scopeKey, kind, id string, limit, offset int) ([]HarnessInjection, error) {
	out, err := queryAll(ctx, s.DB, func(r scanner) (HarnessInjection, error) {
		var in HarnessInjection
		var kind string
		err := r.Scan(&in.ScopeKey, &kind, &in.ID, &in.SessionID, &in.Count, &in.LastInjectedAt)
		in.Kind, in.LastInjectedAt = harness.Kind(kind), in.LastInjectedAt.UTC()
		return in, err
	}, `select scope_key, kind, id, session_id, count, last_injected_at from harness_injections
		where scope_key = $1 and kind = $2 and id = $3 order by last_injected_at desc, session_id
		limit $4 offset $5`, scopeKey, kind, id, clampLimit(limit), max(offset, 0))
	if err != nil {
		return nil, fmt.Errorf("list injections of %s %s/%s: %w", scopeKey, kind, id, err)
	}
	return out, nil
}
