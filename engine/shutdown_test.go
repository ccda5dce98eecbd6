package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestShutdownGrace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, tc := range []struct {
			name     string
			finishes bool
		}{
			{"job finishing within grace completes", true},
			{"job outliving grace is cancelled and retried", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				reg := engine.NewRegistry(nil)
				w := &holdWorker{started: make(chan int64, 1), release: make(chan struct{})}
				engine.Add(reg, engine.Spec{MaxAttempts: 3, Timeout: time.Hour}, w)
				c := enginetest.NewClient(t, s, reg, enginetest.Config(), true)
				if err := c.Start(ctx); err != nil {
					t.Fatal(err)
				}
				res, err := c.Insert(ctx, holdArgs{}, nil)
				if err != nil {
					t.Fatal(err)
				}
				<-w.started
				skip := make(chan struct{})
				done := make(chan bool)
				go func() { done <- engine.Shutdown(c, time.Hour, skip, enginetest.Logger()) }()
				if tc.finishes {
					close(w.release) // the job ends during the grace period
				} else {
					close(skip) // a second signal ends the grace period
				}
				if finished := <-done; finished != tc.finishes {
					t.Fatalf("Shutdown reported finished=%t, want %t", finished, tc.finishes)
				}
				job, err := c.JobGet(ctx, res.Job.ID)
				if err != nil {
					t.Fatal(err)
				}
				if tc.finishes && job.State != rivertype.JobStateCompleted {
					t.Fatalf("job state %s after shutdown, want completed", job.State)
				}
				// River hands a job interrupted by shutdown back as available,
				// without using up the attempt.
				if !tc.finishes && (job.State != rivertype.JobStateAvailable || job.Attempt != 0 || len(job.Errors) != 0) {
					t.Fatalf("interrupted job: state %s attempt %d errors %+v; want available, attempt 0, no errors",
						job.State, job.Attempt, job.Errors)
				}
				if _, err := c.JobDelete(ctx, job.ID); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}
