// Package probe is the built-in probe job: it succeeds, or fails on purpose,
// so an operator can check the pipeline and the dead-letter path end to end.
package probe

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
)

// Args are a probe's arguments.
type Args struct {
	// Fail makes every attempt fail, so the job ends in the dead letters.
	Fail bool `json:"fail,omitempty"`
	// Note is free text an operator can use to find the job again.
	Note string `json:"note,omitempty"`
}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "probe" }

// Spec: two attempts a second apart, so a failing probe reaches the dead
// letters quickly.
var Spec = engine.Spec{Queue: "default", MaxAttempts: 2, Backoff: time.Second, Timeout: 30 * time.Second}

// Worker works probes.
type Worker struct {
	river.WorkerDefaults[Args]
}

// Work succeeds, or fails when asked to.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	if job.Args.Fail {
		return fmt.Errorf("probe failed on purpose (attempt %d of %d)", job.Attempt, job.MaxAttempts)
	}
	return nil
}
