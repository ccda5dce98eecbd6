package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// The plain success of a step, one that enqueues nothing and closes nothing,
// is nearly every success: each part of a fan-out only counts itself off
// its dependents. On Postgres it is one statement, its own transaction, so
// the rows it counts on are held for that statement alone, not for the
// round trips of a transaction: under load those holds were what workflow
// steps queued on.

// pickBucketPostgres locks one bucket of dependent e.step that still
// waits, from the edge's own bucket on, wrapping round: the first no other
// transaction holds, or else (the second branch runs only when the first
// finds none) the first that still waits once its holder is done. Any
// waiting bucket will do (see decrement), so successes finishing at once
// spread over a step's buckets instead of queueing on one, and starting
// from the edge's own keeps the buckets draining evenly, not the first
// ones first, which would leave the last successes of a fan-in one bucket
// to queue on.
const pickBucketPostgres = `
	select * from (
		select w.bucket, w.waiting from workflow_waits w
		where w.run_id = $1 and w.step = e.step and w.waiting > 0
		order by w.bucket < e.bucket, w.bucket limit 1 for update skip locked) free
	union all
	select * from (
		select w.bucket, w.waiting from workflow_waits w
		where w.run_id = $1 and w.step = e.step and w.waiting > 0
		order by w.bucket < e.bucket, w.bucket limit 1 for update) held
	limit 1`

// quickSucceedPostgres records a step's success, takes it off the counts
// of the steps after it and completes its job, all only when that is the
// whole of it (see QuickSucceedWorkflowStep). Rows are locked in the order
// transitions.go gives, each lock taken in full before the next: the
// step's own row (me), one waiting bucket of each step after it, in
// step order (buckets, counted in full), the steps whose
// bucket this empties, in name order (emptied, likewise), and the job's
// row by the writes after. The writes are gated on ok: a success that is
// not plain writes nothing here and takes the transaction path.
const quickSucceedPostgres = `with me as (
	select name from workflow_steps
	where run_id = $1 and name = $2 and status = 'running' and job_id = $3
	for update
),
buckets as materialized (
	select e.step, b.bucket, b.waiting from workflow_edges e
	left join lateral (` + pickBucketPostgres + `) b on true
	where e.run_id = $1 and e.dep = $2 and exists (select from me)
	  and (select status from workflow_runs where id = $1) = 'running'
),
emptied as materialized (
	select s.name, s.waiting from workflow_steps s
	where s.run_id = $1 and s.name in (select step from buckets where waiting = 1)
	order by s.name for update of s
),
counts as materialized (
	select (select count(*) from buckets) as dependents,
	       (select count(*) from buckets where bucket is null) as held,
	       (select count(*) from emptied where waiting <= 1) as readied
),
gate as materialized (
	select dependents > 0 and held = 0 and readied = 0 as ok from counts
),
done as (
	update workflow_steps set status = 'succeeded', output = $4, error = '', finished_at = $5
	where run_id = $1 and name = $2 and (select ok from gate)
	returning 1
),
counted as (
	update workflow_waits w set waiting = w.waiting - 1 from buckets b
	where (select ok from gate) and w.run_id = $1 and w.step = b.step and w.bucket = b.bucket
	returning 1
),
unbucketed as (
	update workflow_steps s set waiting = s.waiting - 1 from emptied t
	where (select ok from gate) and s.run_id = $1 and s.name = t.name
	returning 1
),
completed as (
	update river_job set state = 'completed', finalized_at = $5
	where id = $3 and state = 'running' and (select ok from gate)
	returning 1
)
select ok from gate`

// QuickSucceedWorkflowStep records the success of a step worked by job
// jobID, takes it off the counts of the steps after it and completes the
// job, in one statement that is its own transaction, when that is all the
// success must do: the step is running under that job, its run is running,
// some step comes after it, and none of those is left waiting for nothing
// by it. ok is false otherwise, and nothing was written: the caller records
// the success in a transaction (SucceedWorkflowStep and the rest). SQLite
// always answers false: its transactions run one at a time and hold nothing
// another waits for between statements.
func (s *Store) QuickSucceedWorkflowStep(ctx context.Context, runID, name string, jobID int64, output json.RawMessage) (bool, error) {
	if s.Dialect != Postgres {
		return false, nil
	}
	var ok bool
	if err := s.DB.QueryRowContext(ctx, quickSucceedPostgres, runID, name, jobID, string(output), s.Now()).Scan(&ok); err != nil {
		return false, fmt.Errorf("succeed workflow step %s/%s: %w", runID, name, err)
	}
	return ok, nil
}
