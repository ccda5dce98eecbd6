package dlq_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// failArgs is a test job whose Mode says how each attempt ends: "fail"
// returns an error, "cancel" cancels with an error, "cutoff" cancels the
// way a workflow step cut off by its failed run is, anything else succeeds.
type failArgs struct {
	Mode string `json:"mode"`
	Note string `json:"note,omitempty"`
}

func (failArgs) Kind() string { return "dlqtest_fail" }

type failWorker struct {
	river.WorkerDefaults[failArgs]
	// healed makes "fail" jobs succeed, so a retried dead letter completes.
	healed atomic.Bool
}

func (w *failWorker) Work(ctx context.Context, job *river.Job[failArgs]) error {
	switch {
	case job.Args.Mode == "cancel":
		return river.JobCancel(fmt.Errorf("permanent failure on attempt %d", job.Attempt))
	case job.Args.Mode == "cutoff":
		return river.JobCancel(fmt.Errorf("%sworkflow run wf_x is failed", workflows.CutOff))
	case job.Args.Mode == "fail" && !w.healed.Load():
		return fmt.Errorf("boom on attempt %d", job.Attempt)
	}
	return nil
}

// otherArgs is a second kind, with one attempt, for the kind filters.
type otherArgs struct {
	Fail bool `json:"fail"`
}

func (otherArgs) Kind() string { return "dlqtest_other" }

type otherWorker struct {
	river.WorkerDefaults[otherArgs]
	healed atomic.Bool
}

func (w *otherWorker) Work(ctx context.Context, job *river.Job[otherArgs]) error {
	if job.Args.Fail && !w.healed.Load() {
		return fmt.Errorf("other failed on attempt %d", job.Attempt)
	}
	return nil
}

// uniqueArgs is unique by Key alone: a failing job and a succeeding one with
// the same Key are duplicates.
type uniqueArgs struct {
	Key  string `json:"key" river:"unique"`
	Fail bool   `json:"fail"`
}

func (uniqueArgs) Kind() string { return "dlqtest_unique" }

func (uniqueArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type uniqueWorker struct {
	river.WorkerDefaults[uniqueArgs]
}

func (w *uniqueWorker) Work(ctx context.Context, job *river.Job[uniqueArgs]) error {
	if job.Args.Fail {
		return fmt.Errorf("unique %s failed on attempt %d", job.Args.Key, job.Attempt)
	}
	return nil
}

// idleArgs runs on the maintenance queue, which tests pause so that a job
// stays available.
type idleArgs struct{}

func (idleArgs) Kind() string { return "dlqtest_idle" }

type idleWorker struct {
	river.WorkerDefaults[idleArgs]
}

func (w *idleWorker) Work(context.Context, *river.Job[idleArgs]) error { return nil }

// fixture is a working River client on a test store with the test kinds.
type fixture struct {
	t      *testing.T
	s      *store.Store
	c      *engine.Client
	events <-chan *river.Event
	fail   *failWorker
	other  *otherWorker
}

func newFixture(t *testing.T, s *store.Store) *fixture {
	t.Helper()
	f := &fixture{t: t, s: s, fail: &failWorker{}, other: &otherWorker{}}
	reg := engine.NewRegistry(nil)
	engine.Add(reg, engine.Spec{MaxAttempts: 3, Backoff: time.Millisecond}, f.fail)
	engine.Add(reg, engine.Spec{MaxAttempts: 1}, f.other)
	engine.Add(reg, engine.Spec{MaxAttempts: 1}, &uniqueWorker{})
	engine.Add(reg, engine.Spec{Queue: "maintenance"}, &idleWorker{})
	f.c = enginetest.Start(t, s, reg, enginetest.Config())
	f.events = enginetest.Events(t, f.c)
	return f
}

// insert inserts one job and returns its row as inserted.
func (f *fixture) insert(args river.JobArgs, opts *river.InsertOpts) *rivertype.JobRow {
	f.t.Helper()
	res, err := f.c.Insert(context.Background(), args, opts)
	if err != nil {
		f.t.Fatalf("insert %s: %v", args.Kind(), err)
	}
	if res.UniqueSkippedAsDuplicate {
		f.t.Fatalf("insert %s: skipped as a duplicate of job %d", args.Kind(), res.Job.ID)
	}
	return res.Job
}

// run inserts one job and waits until it reaches a final state. Jobs are run
// one at a time so that they die in insertion order.
func (f *fixture) run(args river.JobArgs) *rivertype.JobRow {
	f.t.Helper()
	return enginetest.WaitFinal(f.t, f.events, f.insert(args, nil).ID)
}

// dead runs a job that must end as a dead letter.
func (f *fixture) dead(args river.JobArgs) *rivertype.JobRow {
	f.t.Helper()
	row := f.run(args)
	if row.State != rivertype.JobStateDiscarded && row.State != rivertype.JobStateCancelled {
		f.t.Fatalf("job %d (%s) ended %s, want a dead letter", row.ID, row.Kind, row.State)
	}
	return row
}

// waitFinal waits for a job that is already in the queue (a retried one).
func (f *fixture) waitFinal(id int64) *rivertype.JobRow {
	f.t.Helper()
	return enginetest.WaitFinal(f.t, f.events, id)
}

// get reads a job's current row.
func (f *fixture) get(id int64) *rivertype.JobRow {
	f.t.Helper()
	row, err := f.c.JobGet(context.Background(), id)
	if err != nil {
		f.t.Fatalf("get job %d: %v", id, err)
	}
	return row
}

// pauseMaintenance pauses the maintenance queue and waits until its producer
// has stopped fetching, so an idleArgs job inserted afterwards stays available.
func (f *fixture) pauseMaintenance() {
	f.t.Helper()
	paused, cancel := f.c.Subscribe(river.EventKindQueuePaused)
	defer cancel()
	if err := f.c.QueuePause(context.Background(), "maintenance", nil); err != nil {
		f.t.Fatalf("pause maintenance: %v", err)
	}
	enginetest.WaitFor(f.t, paused, func(ev *river.Event) bool {
		return ev.Queue != nil && ev.Queue.Name == "maintenance"
	})
}

// parked inserts a job that stays available in the paused maintenance queue.
func (f *fixture) parked() *rivertype.JobRow {
	f.t.Helper()
	f.pauseMaintenance()
	row := f.insert(idleArgs{}, nil)
	if row.State != rivertype.JobStateAvailable {
		f.t.Fatalf("parked job is %s, want available", row.State)
	}
	return row
}

// requireUnchanged fails when a job's state, attempts or finalized time
// differ from the row given.
func (f *fixture) requireUnchanged(want *rivertype.JobRow) {
	f.t.Helper()
	got := f.get(want.ID)
	if got.State != want.State || got.Attempt != want.Attempt || got.MaxAttempts != want.MaxAttempts ||
		!sameTime(got.FinalizedAt, want.FinalizedAt) || len(got.Errors) != len(want.Errors) {
		f.t.Fatalf("job %d changed: now %s attempt %d/%d finalized %v errors %d; was %s attempt %d/%d finalized %v errors %d",
			want.ID, got.State, got.Attempt, got.MaxAttempts, got.FinalizedAt, len(got.Errors),
			want.State, want.Attempt, want.MaxAttempts, want.FinalizedAt, len(want.Errors))
	}
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
