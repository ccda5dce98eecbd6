package store

import (
	"cmp"
	"context"
	"fmt"
)

// SubagentSessions lists the sessions started from parent (their
// session_start names it as parent) that are not primary: DSH's subagent
// children. A fork names its parent too but is a primary session with a
// retro of its own, so it is left out. They are in the
// parent's workspace, oldest first, at most limit (defaults to 20, capped
// at 100) of the newest. A retro of the parent reads their failures.
func (s *Store) SubagentSessions(ctx context.Context, parent, workspace string, limit int) ([]string, error) {
	limit = min(cmp.Or(limit, 20), 100)
	parentOf := "json_extract(payload, '$.parent')"
	if s.Dialect == Postgres {
		parentOf = "(payload::jsonb ->> 'parent')"
	}
	rows, err := s.DB.QueryContext(ctx, `select session_id from (
			select session_id, min(time) as started from events
			where workspace = $1 and type = 'session_start' and session_id <> $2 and `+parentOf+` = $2
				and session_id in (select id from sessions where not is_primary)
			group by session_id order by started desc, session_id desc limit $3
		) children order by started, session_id`, workspace, parent, limit)
	if err != nil {
		return nil, fmt.Errorf("list subagent sessions of %s: %w", parent, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
