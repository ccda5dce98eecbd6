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

// StepCutOff is in the error of a workflow step job cancelled because its
// run had failed or been cancelled before the step began (workflows.CutOff):
// not a dead letter.
const StepCutOff = "step cut off by its run: "

// DeadLetterCounts counts dead letters by kind: discarded jobs, and jobs
// cancelled with an error (a permanent failure). A job cancelled without
// one (an operator's cancel, a workflow step never started) did not fail,
// nor did a step its run cut off (StepCutOff).
func (s *Store) DeadLetterCounts(ctx context.Context) (map[string]int64, error) {
	failed := "coalesce(array_length(errors, 1), 0) > 0 and errors[array_length(errors, 1)]->>'error' not like '%" + StepCutOff + "%'"
	if s.Dialect == SQLite {
		failed = "errors is not null and json_array_length(errors) > 0 and json_extract(errors, '$[#-1].error') not like '%" + StepCutOff + "%'"
	}
	rows, err := s.DB.QueryContext(ctx, `select kind, count(*) from river_job
		where state = 'discarded' or (state = 'cancelled' and `+failed+`) group by kind`)
	if err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			return nil, fmt.Errorf("count dead letters: %w", err)
		}
		out[kind] = n
	}
	return out, rows.Err()
}
