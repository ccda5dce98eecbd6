// Package dlq is the operator's view of the dead letters: River jobs that
// used their last attempt (state discarded) or were cancelled as permanent
// failures. It lists, shows, retries and purges them, for the CLI and the
// admin API alike.
package dlq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/workflows"
)

// States are the job states that hold dead letters: discarded (attempts
// exhausted) and cancelled with an error (a permanent failure).
var States = []rivertype.JobState{rivertype.JobStateDiscarded, rivertype.JobStateCancelled}

// Letter is one dead job.
type Letter struct {
	ID          int64           `json:"id"`
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue"`
	State       string          `json:"state"`
	Attempts    int             `json:"attempts"`
	MaxAttempts int             `json:"max_attempts"`
	LastError   string          `json:"last_error"`
	DiedAt      time.Time       `json:"died_at"`
	CreatedAt   time.Time       `json:"created_at"`
	Args        json.RawMessage `json:"args,omitempty"`
	// Errors holds every attempt's error; filled by Get only.
	Errors []AttemptError `json:"errors,omitempty"`
}

// AttemptError is one failed attempt.
type AttemptError struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// Filter narrows List.
type Filter struct {
	// Kind keeps only this job kind.
	Kind string
	// Since keeps only jobs that died at or after this time.
	Since time.Time
	// Limit caps the result. Defaults to 1000.
	Limit int
}

// ErrNotDead is returned for a job that exists but is not a dead letter.
var ErrNotDead = errors.New("not a dead letter")

// ErrNoJob is returned for an id that names no job.
var ErrNoJob = errors.New("no such job")

func letterOf(j *rivertype.JobRow, withErrors bool) Letter {
	l := Letter{
		ID: j.ID, Kind: j.Kind, Queue: j.Queue, State: string(j.State),
		Attempts: j.Attempt, MaxAttempts: j.MaxAttempts,
		CreatedAt: j.CreatedAt.UTC(), Args: json.RawMessage(j.EncodedArgs),
	}
	if j.FinalizedAt != nil {
		l.DiedAt = j.FinalizedAt.UTC()
	}
	if n := len(j.Errors); n > 0 {
		l.LastError = j.Errors[n-1].Error
	}
	if withErrors {
		for _, e := range j.Errors {
			l.Errors = append(l.Errors, AttemptError{Attempt: e.Attempt, At: e.At.UTC(), Error: e.Error})
		}
	}
	return l
}

// List returns dead letters, the most recent first.
func List(ctx context.Context, c *engine.Client, f Filter) ([]Letter, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	var out []Letter
	err := each(ctx, c, f.Kind, func(j *rivertype.JobRow) bool {
		if j.FinalizedAt != nil && !f.Since.IsZero() && j.FinalizedAt.Before(f.Since) {
			return false
		}
		out = append(out, letterOf(j, false))
		return len(out) < limit
	})
	return out, err
}

// each visits dead jobs newest first until visit returns false.
func each(ctx context.Context, c *engine.Client, kind string, visit func(*rivertype.JobRow) bool) error {
	params := river.NewJobListParams().States(States...).
		OrderBy(river.JobListOrderByFinalizedAt, river.SortOrderDesc).First(500)
	if kind != "" {
		params = params.Kinds(kind)
	}
	for {
		res, err := c.JobList(ctx, params)
		if err != nil {
			return fmt.Errorf("list dead letters: %w", err)
		}
		for _, j := range res.Jobs {
			if !isDead(j) {
				continue
			}
			if !visit(j) {
				return nil
			}
		}
		if len(res.Jobs) < 500 {
			return nil
		}
		params = params.After(res.LastCursor)
	}
}

// Get returns one dead letter with every attempt's error.
func Get(ctx context.Context, c *engine.Client, id int64) (Letter, error) {
	j, err := c.JobGet(ctx, id)
	if errors.Is(err, river.ErrNotFound) {
		return Letter{}, fmt.Errorf("job %d: %w", id, ErrNoJob)
	}
	if err != nil {
		return Letter{}, fmt.Errorf("get job %d: %w", id, err)
	}
	if !isDead(j) {
		return letterOf(j, true), fmt.Errorf("job %d is %s: %w", id, j.State, ErrNotDead)
	}
	return letterOf(j, true), nil
}

// isDead: discarded, or cancelled with an error. A job cancelled without
// one (a workflow step that never started, an operator's cancel) did not
// fail, nor did a workflow step its failed run cut off before it began
// (workflows.CutOff): retrying the step that failed brings it back, so
// listing it would only bury the one dead letter that matters.
func isDead(j *rivertype.JobRow) bool {
	if j.State == rivertype.JobStateDiscarded {
		return true
	}
	return j.State == rivertype.JobStateCancelled && len(j.Errors) > 0 &&
		!strings.Contains(j.Errors[len(j.Errors)-1].Error, workflows.CutOff)
}

// Selector says which dead letters to retry: ids, or every one of a kind, or all.
type Selector struct {
	IDs  []int64
	Kind string
	All  bool
}

// SelectorError is a Selector that selects nothing, or selects in several
// ways at once: the caller's mistake, unlike a failure to read the jobs.
type SelectorError struct{ Problem string }

func (e *SelectorError) Error() string { return e.Problem }

// RetryResult says what happened to one dead letter.
type RetryResult struct {
	ID      int64  `json:"id"`
	Kind    string `json:"kind"`
	Retried bool   `json:"retried"`
	// Reason explains a dead letter that was not retried.
	Reason string `json:"reason,omitempty"`
	// BlockedBy is the newer job holding the same unique key, if that is why.
	BlockedBy int64 `json:"blocked_by,omitempty"`
}

// Retry makes the selected dead letters available to run again now. With
// dryRun it reports what it would retry and changes nothing. A job that cannot
// be retried is reported with its reason; it never stops the others.
func Retry(ctx context.Context, c *engine.Client, sel Selector, dryRun bool) ([]RetryResult, error) {
	targets, err := selectTargets(ctx, c, sel)
	if err != nil {
		return nil, err
	}
	out := make([]RetryResult, 0, len(targets))
	for _, t := range targets {
		out = append(out, retryOne(ctx, c, t, dryRun))
	}
	return out, nil
}

func selectTargets(ctx context.Context, c *engine.Client, sel Selector) ([]RetryResult, error) {
	switch {
	case len(sel.IDs) > 0 && (sel.All || sel.Kind != ""):
		return nil, &SelectorError{Problem: "choose ids, a kind, or all; not several"}
	case len(sel.IDs) > 0:
		out := make([]RetryResult, 0, len(sel.IDs))
		for _, id := range sel.IDs {
			out = append(out, RetryResult{ID: id})
		}
		return out, nil
	case sel.All || sel.Kind != "":
		var out []RetryResult
		err := each(ctx, c, sel.Kind, func(j *rivertype.JobRow) bool {
			out = append(out, RetryResult{ID: j.ID, Kind: j.Kind})
			return true
		})
		return out, err
	default:
		return nil, &SelectorError{Problem: "nothing selected: give job ids, a kind, or all"}
	}
}

func retryOne(ctx context.Context, c *engine.Client, r RetryResult, dryRun bool) RetryResult {
	j, err := c.JobGet(ctx, r.ID)
	if err != nil {
		r.Reason = "no such job"
		if !errors.Is(err, river.ErrNotFound) {
			r.Reason = err.Error()
		}
		return r
	}
	r.Kind = j.Kind
	if !isDead(j) {
		r.Reason = fmt.Sprintf("job is %s, not a dead letter", j.State)
		return r
	}
	if blocker, err := uniqueBlocker(ctx, c, j); err != nil {
		r.Reason = err.Error()
		return r
	} else if blocker != nil {
		r.BlockedBy = blocker.ID
		r.Reason = fmt.Sprintf("a newer %s job %d (%s) holds the same unique key; retry or cancel that one instead",
			j.Kind, blocker.ID, blocker.State)
		return r
	}
	if dryRun {
		r.Retried = true
		return r
	}
	if _, err := c.JobRetry(ctx, r.ID); err != nil {
		r.Reason = "retry failed: " + err.Error()
		if isUniqueViolation(err) {
			r.Reason = "a newer job with the same unique key appeared during the retry; nothing changed"
		}
		return r
	}
	r.Retried = true
	return r
}

// uniqueBlocker finds a live job with the same unique key, which would make
// River's retry fail on the unique index. A job holds its key only in the
// states of its own UniqueOpts.ByState (River's index checks each row's
// unique_states), so a completed duplicate blocks only if ByState has completed.
func uniqueBlocker(ctx context.Context, c *engine.Client, j *rivertype.JobRow) (*rivertype.JobRow, error) {
	if len(j.UniqueKey) == 0 {
		return nil, nil
	}
	params := river.NewJobListParams().Kinds(j.Kind).States(
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled, rivertype.JobStateCompleted,
	).OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(1000)
	res, err := c.JobList(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("look for a newer duplicate: %w", err)
	}
	for _, o := range res.Jobs {
		if o.ID != j.ID && bytes.Equal(o.UniqueKey, j.UniqueKey) && slices.Contains(o.UniqueStates, o.State) {
			return o, nil
		}
	}
	return nil, nil
}

func isUniqueViolation(err error) bool {
	s := err.Error()
	return strings.Contains(s, "23505") || strings.Contains(s, "UNIQUE constraint failed") ||
		strings.Contains(s, "duplicate key")
}

// Purge deletes dead letters that died before now-olderThan and returns the
// ones it deleted. With dryRun it lists them and deletes nothing.
func Purge(ctx context.Context, c *engine.Client, olderThan time.Duration, now time.Time, kind string, dryRun bool) ([]Letter, error) {
	if olderThan < 0 || olderThan > MaxAge {
		return nil, fmt.Errorf("older-than %s: want 0 to %s", olderThan, maxAgeText)
	}
	cutoff := now.Add(-olderThan)
	var victims []Letter
	err := each(ctx, c, kind, func(j *rivertype.JobRow) bool {
		if j.FinalizedAt != nil && j.FinalizedAt.Before(cutoff) {
			victims = append(victims, letterOf(j, false))
		}
		return true
	})
	if err != nil || dryRun || len(victims) == 0 {
		return victims, err
	}
	var purged []Letter
	for start := 0; start < len(victims); start += 500 {
		batch := victims[start:min(start+500, len(victims))]
		ids := make([]int64, 0, len(batch))
		for _, v := range batch {
			ids = append(ids, v.ID)
		}
		// First: JobDeleteMany deletes only 100 rows unless told otherwise.
		// States again: a job retried since it was listed is not purged.
		res, err := c.JobDeleteMany(ctx, river.NewJobDeleteManyParams().IDs(ids...).States(States...).First(len(ids)))
		if err != nil {
			return purged, fmt.Errorf("purge: %w", err)
		}
		gone := make(map[int64]bool, len(res.Jobs))
		for _, j := range res.Jobs {
			gone[j.ID] = true
		}
		for _, v := range batch {
			if gone[v.ID] {
				purged = append(purged, v)
			}
		}
	}
	return purged, nil
}

// PurgePreview is Purge's dry run kept small: the first max letters that
// died before now-olderThan, newest first, and how many there are in all.
func PurgePreview(ctx context.Context, c *engine.Client, olderThan time.Duration, now time.Time, kind string, max int) ([]Letter, int, error) {
	if olderThan < 0 || olderThan > MaxAge {
		return nil, 0, fmt.Errorf("older-than %s: want 0 to %s", olderThan, maxAgeText)
	}
	cutoff := now.Add(-olderThan)
	var first []Letter
	n := 0
	err := each(ctx, c, kind, func(j *rivertype.JobRow) bool {
		if j.FinalizedAt != nil && j.FinalizedAt.Before(cutoff) {
			if n++; len(first) < max {
				first = append(first, letterOf(j, false))
			}
		}
		return true
	})
	return first, n, err
}

// ParseSince reads an RFC 3339 time, or a duration back from now ("24h", "7d").
func ParseSince(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	d, err := ParseAge(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("want an RFC 3339 time or a duration such as 24h or 7d: %w", err)
	}
	return now.Add(-d), nil
}
