package store

import (
	"context"
	"fmt"
	"time"
)

// PlaybookWorkspace is one workspace's playbooks summed up, for the
// panel's list of workspaces (web/playbooks.go).
type PlaybookWorkspace struct {
	Workspace string
	Playbooks int
	// Stale counts the playbooks unverified since before the cutoff the
	// caller gave (the last success, else the last retro's writing).
	Stale                  int
	Uses, Successes, Fails int
	// UpdatedAt is the latest retro's writing of one of them.
	UpdatedAt time.Time
}

// PlaybookWorkspaces lists the workspaces that have playbooks, by name: a
// page of limit from offset. staleBefore is the staleness cutoff (now less
// digest.PlaybookStaleAfter).
func (s *Store) PlaybookWorkspaces(ctx context.Context, staleBefore time.Time, limit, offset int) ([]PlaybookWorkspace, error) {
	out, err := queryAll(ctx, s.DB, func(r scanner) (PlaybookWorkspace, error) {
		var w PlaybookWorkspace
		var updated any
		if err := r.Scan(&w.Workspace, &w.Playbooks, &w.Stale, &w.Uses, &w.Successes, &w.Fails, &updated); err != nil {
			return w, err
		}
		var err error
		w.UpdatedAt, err = aggregateTime(updated)
		return w, err
	}, `select workspace, count(*), coalesce(sum(case when coalesce(verified_at, updated_at) < $1 then 1 else 0 end), 0),
		coalesce(sum(uses), 0), coalesce(sum(successes), 0), coalesce(sum(fails), 0), max(updated_at)
		from playbooks group by workspace order by workspace limit $2 offset $3`,
		utcMicro(staleBefore), max(limit, 1), max(offset, 0))
	if err != nil {
		return nil, fmt.Errorf("list the workspaces with playbooks: %w", err)
	}
	return out, nil
}
