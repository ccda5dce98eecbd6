package store

import (
	"context"
	"fmt"
)

// JobCount is how many River jobs of one kind, queue and state exist.
type JobCount struct {
	Kind  string
	Queue string
	State string
	N     int64
}

// JobCounts counts River's jobs by kind, queue and state, for health and
// metrics. It reads river_job directly: River's client has no count API.
func (s *Store) JobCounts(ctx context.Context) ([]JobCount, error) {
	rows, err := s.DB.QueryContext(ctx,
		"select kind, queue, state, count(*) from river_job group by kind, queue, state order by kind, queue, state")
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	defer rows.Close()
	var out []JobCount
	for rows.Next() {
		var c JobCount
		if err := rows.Scan(&c.Kind, &c.Queue, &c.State, &c.N); err != nil {
			return nil, fmt.Errorf("count jobs: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
