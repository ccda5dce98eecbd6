package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
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
	rows, err := s.readDB().QueryContext(ctx,
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
	rows, err := s.readDB().QueryContext(ctx, `select kind, count(*) from river_job
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

// riverTimeFormat is how River's SQLite driver writes a time: River
// compares these strings with SQLite's own clock, so no other format will do.
const riverTimeFormat = "2006-01-02 15:04:05.000"

// CompleteJobTx completes a running River job in tx, as
// river.JobCompleteTx does for a job that recorded no metadata: state
// completed, finalized now. It is one short statement. River's own is long
// enough that Postgres plans it afresh on every call and SQLite parses it
// each time, and a workflow step completes its job in every success; the
// metadata a worker records is still merged by River's completer after
// Work returns. A job that is not running (completed, cancelled, deleted)
// is left as it is.
func (s *Store) CompleteJobTx(ctx context.Context, tx *sql.Tx, id int64) error {
	var now any = s.Now()
	if s.Dialect == SQLite {
		now = s.Now().Round(time.Millisecond).Format(riverTimeFormat)
	}
	_, err := tx.ExecContext(ctx, `update river_job set state = 'completed', finalized_at = $2
		where id = $1 and state = 'running'`, id, now)
	if err != nil {
		return fmt.Errorf("complete job %d: %w", id, err)
	}
	return nil
}

// JobAttempt is where one River job is: its state, its attempt (River
// counts from 1 as each attempt starts, and gives a snoozed attempt back)
// and when that attempt started (nil before the first).
type JobAttempt struct {
	State       string
	Attempt     int
	AttemptedAt *time.Time
}

// JobAttempt reads one River job's state and attempt by id, one read of
// river_job's primary key, or an error wrapping ErrNotFound: what a bench
// cell's capability is checked against on every call it makes (it works
// only while the attempt that minted it is running).
func (s *Store) JobAttempt(ctx context.Context, id int64) (JobAttempt, error) {
	var j JobAttempt
	var at sql.NullTime
	err := s.DB.QueryRowContext(ctx, "select state, attempt, attempted_at from river_job where id = $1", id).Scan(&j.State, &j.Attempt, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return j, fmt.Errorf("read job %d: %w", id, err)
	}
	if at.Valid {
		t := at.Time.UTC()
		j.AttemptedAt = &t
	}
	return j, nil
}
