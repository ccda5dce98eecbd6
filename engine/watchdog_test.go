package engine_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

type holdArgs struct{}

func (holdArgs) Kind() string { return "hold" }

// holdWorker signals when it starts and then holds its job until cancelled,
// like a worker that dies mid-job; with release closed it completes at once.
type holdWorker struct {
	river.WorkerDefaults[holdArgs]
	started chan int64
	release chan struct{}
}

func (w *holdWorker) Work(ctx context.Context, job *river.Job[holdArgs]) error {
	select {
	case w.started <- job.ID:
	default:
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.release:
		return nil
	}
}

func TestWatchdogRescuesJobsOfDeadWorkers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		spec := engine.Spec{MaxAttempts: 3, Timeout: time.Hour}

		// Worker A takes the job and "dies": its heartbeat is an hour old.
		// With one worker slot, busy holding the job, it cannot fetch the
		// job again once rescued.
		regA := engine.NewRegistry(nil)
		held := &holdWorker{started: make(chan int64, 1), release: make(chan struct{})}
		engine.Add(regA, spec, held)
		cfgA := enginetest.Config()
		cfgA.Workers.Queues = map[string]int{"default": 1}
		a := enginetest.NewClient(t, s, regA, cfgA, true)
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := a.Insert(ctx, holdArgs{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-held.started:
		case <-testwait.After(t):
			t.Fatal("worker A never started the job")
		}
		now := time.Now()
		clock := func() time.Time { return now }
		deadA := &engine.Watchdog{Store: s, Client: a, Logger: enginetest.Logger(), Now: func() time.Time { return now.Add(-time.Hour) }}
		if err := deadA.Beat(ctx); err != nil {
			t.Fatal(err)
		}

		// Worker B's watchdog finds A dead and rescues its running job.
		regB := engine.NewRegistry(nil)
		finisher := &holdWorker{started: make(chan int64, 1), release: make(chan struct{})}
		close(finisher.release)
		engine.Add(regB, spec, finisher)
		b := enginetest.NewClient(t, s, regB, enginetest.Config(), true)
		dog := &engine.Watchdog{Store: s, Client: b, Logger: enginetest.Logger(), Now: clock}
		if err := dog.Beat(ctx); err != nil {
			t.Fatal(err)
		}
		n, err := dog.RescueOrphans(ctx)
		if err != nil || n != 1 {
			t.Fatalf("RescueOrphans = %d, %v; want 1 job rescued", n, err)
		}
		if n, _ := dog.RescueOrphans(ctx); n != 0 {
			t.Fatalf("second pass rescued %d jobs again", n)
		}
		job, err := b.JobGet(ctx, res.Job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if job.State != rivertype.JobStateAvailable || len(job.Errors) != 1 ||
			!strings.Contains(job.Errors[0].Error, "stopped heartbeating") {
			t.Fatalf("rescued job: state %s errors %+v", job.State, job.Errors)
		}
		// A stays up, its one slot still held by the first attempt, until the
		// job is done: stopping it now would free that slot and let its
		// producer fetch the rescued job once more before it stops, which a
		// dead worker could not do.
		t.Cleanup(func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = a.StopAndCancel(stopCtx)
		})

		events := enginetest.Events(t, b)
		if err := b.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Stop(context.Background()) })
		if row := enginetest.WaitFinal(t, events, res.Job.ID); row.State != rivertype.JobStateCompleted || row.Attempt != 2 {
			t.Fatalf("rescued job ended %s on attempt %d (attempted by %v, errors %+v); want completed on attempt 2", row.State, row.Attempt, row.AttemptedBy, row.Errors)
		}
	})
}

// A worker row from this host whose process is gone is dead at once, before
// DeadAfter; one whose process lives waits for DeadAfter.
func TestWatchdogSameHostDeadPID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			t.Skipf("cannot run true: %v", err)
		}
		host, _ := os.Hostname()
		now := time.Now().UTC()
		beat := now.Add(-20 * time.Second)
		for id, pid := range map[string]int{"gone": cmd.Process.Pid, "alive": os.Getpid()} {
			if err := s.Heartbeat(ctx, store.Worker{ClientID: id, Host: host, PID: pid, StartedAt: beat, HeartbeatAt: beat}); err != nil {
				t.Fatal(err)
			}
		}
		c := enginetest.NewClient(t, s, engine.NewRegistry(nil), enginetest.Config(), false)
		dog := &engine.Watchdog{Store: s, Client: c, Logger: enginetest.Logger(), Now: func() time.Time { return now }}
		if _, err := dog.RescueOrphans(ctx); err != nil {
			t.Fatal(err)
		}
		left, err := s.StaleWorkers(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 1 || left[0].ClientID != "alive" {
			t.Fatalf("workers left = %+v; want only the live one", left)
		}
	})
}
