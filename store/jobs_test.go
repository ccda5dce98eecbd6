package store_test

import (
	"errors"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// JobAttempt reads a job's state, attempt and the attempt's start as
// River handed them to its worker, through each of River's transitions:
// started, retried (the next attempt), snoozed (the same attempt number,
// started later), completed; a job that does not exist is ErrNotFound.
func TestJobAttempt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		j := storetest.StartJob(t, s, "bench_cell")
		check := func(when, state string, attempt int) {
			t.Helper()
			got, err := s.JobAttempt(t.Context(), j.Row.ID)
			if err != nil || got.State != state || got.Attempt != attempt || got.AttemptedAt == nil ||
				!got.AttemptedAt.Equal(*j.Row.AttemptedAt) {
				t.Fatalf("%s: %+v (attempted_at %v) %v; want %s, attempt %d, attempted_at %v", when, got, got.AttemptedAt, err,
					state, attempt, *j.Row.AttemptedAt)
			}
		}
		check("started", "running", 1)
		first := *j.Row.AttemptedAt
		j.Retry()
		check("retried", "running", 2)
		j.Snooze()
		check("snoozed and started again", "running", 2)
		if !j.Row.AttemptedAt.After(first) {
			t.Errorf("attempted_at %v after a snooze, want after %v", j.Row.AttemptedAt, first)
		}
		j.Complete()
		check("completed", "completed", 2)
		if _, err := s.JobAttempt(t.Context(), j.Row.ID+1000); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a missing job: %v, want ErrNotFound", err)
		}
	})
}
