package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// followOpts tune followJob. Zero fields take their defaults.
type followOpts struct {
	// Timeout bounds the whole wait. Defaults to no bound but ctx's.
	Timeout time.Duration
	// Interval is the time between two reads of the job. Defaults to 200ms.
	Interval time.Duration
	// HintAfter is how long the job may wait with no worker taking it
	// before followJob prints, once, that none seems to be running.
	// Defaults to 15s.
	HintAfter time.Duration
	// OnChange, when set, is called with every read of the job that differs
	// from the previous one (state, attempt or errors), after its lines are
	// printed; prev is nil on the first read.
	OnChange func(prev, cur *rivertype.JobRow)
}

func (o followOpts) withDefaults() followOpts {
	o.Interval = cmp.Or(o.Interval, 200*time.Millisecond)
	o.HintAfter = cmp.Or(o.HintAfter, 15*time.Second)
	return o
}

// noWorkerHint is printed once when a job waits longer than HintAfter with
// no attempt.
const noWorkerHint = "no worker has taken it yet; is `mull serve` or `mull worker` running against this database?"

// followJob reads a job until it is completed, cancelled or discarded and
// returns its final row, printing a line to w for each change a user cares
// about (a worker took it, an attempt failed and when it retries, a snooze).
// The CLI is another process than the workers, so it polls the job's row
// instead of subscribing to River's events. When the timeout passes or ctx
// ends first, it returns an *exitError (status 1) saying where the job was
// left: it stays queued.
func followJob(ctx context.Context, a *app, jobID int64, w io.Writer, opts followOpts) (*rivertype.JobRow, error) {
	opts = opts.withDefaults()
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	hint := time.NewTimer(opts.HintAfter)
	defer hint.Stop()
	var prev *rivertype.JobRow
	for {
		job, err := a.client.JobGet(ctx, jobID)
		switch {
		case errors.Is(err, rivertype.ErrNotFound):
			return nil, fmt.Errorf("job %d no longer exists: was it deleted?", jobID)
		case err != nil && ctx.Err() == nil:
			return nil, fmt.Errorf("follow job %d: %w", jobID, err)
		case err == nil:
			if changed(prev, job) {
				for _, line := range progressLines(prev, job) {
					fmt.Fprintln(w, line)
				}
				if opts.OnChange != nil {
					opts.OnChange(prev, job)
				}
			}
			if job.FinalizedAt != nil {
				return job, nil
			}
			prev = job
		}
		select {
		case <-ctx.Done():
			return nil, stoppedFollowing(ctx, a, jobID, prev, opts.Timeout)
		case <-hint.C:
			if prev != nil && untaken(prev) {
				fmt.Fprintln(w, waitingHint(ctx, a, prev.Queue))
			}
		case <-tick.C:
		}
	}
}

// waitingHint says why a job may not have been taken: its queue is paused,
// or no worker seems to run.
func waitingHint(ctx context.Context, a *app, queue string) string {
	if q, err := a.client.QueueGet(ctx, queue); err == nil && q.PausedAt != nil {
		return fmt.Sprintf("no worker has taken it yet: the %s queue is paused since %s; 'mull queues resume %s' resumes it",
			queue, q.PausedAt.UTC().Format(time.RFC3339), queue)
	}
	return noWorkerHint
}

// changed says whether a read differs from the last in what followJob
// reports.
func changed(prev, cur *rivertype.JobRow) bool {
	return prev == nil || prev.State != cur.State || prev.Attempt != cur.Attempt || len(prev.Errors) != len(cur.Errors)
}

// untaken: no worker has started the job although it could run.
func untaken(job *rivertype.JobRow) bool {
	return job.Attempt == 0 && job.State == rivertype.JobStateAvailable
}

// progressLines are the lines for a job's change from prev (nil: first
// read) to cur: each newly recorded error, then the new state. A read can
// miss states (a fast retry goes retryable, available and running between
// two reads), so errors are reported from the job's error list, which
// keeps every attempt's.
func progressLines(prev, cur *rivertype.JobRow) []string {
	var lines []string
	seen := 0
	if prev != nil {
		seen = len(prev.Errors)
	}
	for i := seen; i < len(cur.Errors); i++ {
		e := cur.Errors[i]
		last := i == len(cur.Errors)-1
		if last && cur.State == rivertype.JobStateRetryable {
			lines = append(lines, fmt.Sprintf("attempt %d/%d failed; retrying at %s after error: %s",
				e.Attempt, cur.MaxAttempts, cur.ScheduledAt.UTC().Format(time.RFC3339), oneLine(e.Error, 300)))
			continue
		}
		lines = append(lines, fmt.Sprintf("attempt %d/%d failed: %s", e.Attempt, cur.MaxAttempts, oneLine(e.Error, 300)))
	}
	if prev != nil && prev.State == cur.State && prev.Attempt == cur.Attempt {
		return lines
	}
	switch cur.State {
	case rivertype.JobStateRunning:
		lines = append(lines, fmt.Sprintf("running, attempt %d/%d", cur.Attempt, cur.MaxAttempts))
	case rivertype.JobStateScheduled:
		lines = append(lines, "waiting until "+cur.ScheduledAt.UTC().Format(time.RFC3339)+" (scheduled or snoozed)")
	case rivertype.JobStatePending:
		lines = append(lines, "pending")
	}
	return lines
}

// stoppedFollowing is followJob's error when it gives up: the job is not
// finished and stays queued.
func stoppedFollowing(ctx context.Context, a *app, jobID int64, last *rivertype.JobRow, timeout time.Duration) error {
	state, tail := "unknown", ""
	if last != nil {
		state = string(last.State)
		if untaken(last) {
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			tail = "; " + waitingHint(hctx, a, last.Queue)
		}
	}
	why := "interrupted"
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && timeout > 0:
		why = "after " + timeout.String()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		why = "at its deadline"
	}
	return &exitError{code: 1, err: fmt.Errorf("stopped following job %d %s: it is still %s and stays queued (see 'mull jobs list')%s",
		jobID, why, state, tail)}
}
