package store

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// DigestSectionsChangedSince reports whether the rows a digest renders
// beside memories changed for some workspaces after since (a digest's
// publication): a handoff recorded, a playbook written, a proposal made or
// decided. Every writer stamps those rows with the store's clock, so the
// stamps compare with a published_at. A playbook's use is not a change
// here, as a memory's bump is not one for MemoryChangesSince: it shows at
// the next publication, so an agent's own use does not reset its session's
// cached prompt.
func (s *Store) DigestSectionsChangedSince(ctx context.Context, q querier, workspaces []string, since time.Time) (bool, error) {
	if len(workspaces) == 0 {
		return false, nil
	}
	in, args := memoryWhere(workspaces, false)
	at := "$" + strconv.Itoa(len(args)+1)
	args = append(args, utcMicro(since))
	var changed int
	err := q.QueryRowContext(ctx, `select case when
		exists (select 1 from handoffs where `+in+` and recorded_at > `+at+`) or
		exists (select 1 from playbooks where `+in+` and updated_at > `+at+`) or
		exists (select 1 from proposals where `+in+` and (created_at > `+at+` or decided_at > `+at+`))
		then 1 else 0 end`, args...).Scan(&changed)
	if err != nil {
		return false, fmt.Errorf("digest sections of %q changed since %s: %w", workspaces, since.Format(time.RFC3339Nano), err)
	}
	return changed == 1, nil
}
