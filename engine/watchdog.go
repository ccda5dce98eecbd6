package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/store"
)

// processExists reports whether a process with this id runs on this host.
// A reused id reads as alive, which only delays the rescue to DeadAfter.
func processExists(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Watchdog keeps this process's heartbeat and rescues, at once, the running
// jobs of worker processes that stopped heartbeating (killed, crashed, lost
// their machine). River's own rescuer would wait for RescueStuckJobsAfter and
// each job's timeout, which for LLM jobs is many minutes.
type Watchdog struct {
	Store  *store.Store
	Client *Client
	Logger *slog.Logger
	// Interval between heartbeats and rescue passes. Defaults to 10s.
	Interval time.Duration
	// DeadAfter is how long without a heartbeat makes a process dead.
	// Defaults to 45s: four missed beats.
	DeadAfter time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Queues are the queues this process works, recorded with its
	// heartbeat for `mull workers list`.
	Queues []string

	started time.Time
}

func (w *Watchdog) init() {
	w.Interval = cmp.Or(w.Interval, 10*time.Second)
	w.DeadAfter = cmp.Or(w.DeadAfter, 45*time.Second)
	if w.Now == nil {
		w.Now = time.Now
	}
	if w.started.IsZero() {
		w.started = w.Now()
	}
}

// Run beats and rescues every Interval until ctx ends, then removes this
// process's row so that a clean stop is never mistaken for a death.
func (w *Watchdog) Run(ctx context.Context) {
	w.init()
	tick := time.NewTicker(w.Interval)
	defer tick.Stop()
	for {
		if err := w.Beat(ctx); err != nil && ctx.Err() == nil {
			w.Logger.Warn("heartbeat failed", "error", err)
		}
		if n, err := w.RescueOrphans(ctx); err != nil && ctx.Err() == nil {
			w.Logger.Warn("orphan rescue failed", "error", err)
		} else if n > 0 {
			w.Logger.Warn("rescued jobs of dead workers", "jobs", n)
		}
		select {
		case <-ctx.Done():
			forgetCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = w.Store.ForgetWorker(forgetCtx, w.Client.ID())
			cancel()
			return
		case <-tick.C:
		}
	}
}

// Beat records this process as alive.
func (w *Watchdog) Beat(ctx context.Context) error {
	w.init()
	host, _ := os.Hostname()
	return w.Store.Heartbeat(ctx, store.Worker{
		ClientID: w.Client.ID(), Host: host, PID: os.Getpid(), StartedAt: w.started, HeartbeatAt: w.Now(), Queues: w.Queues,
	})
}

// RescueOrphans makes the running jobs of dead workers available now (or
// discards them when they were on their last attempt), recording why in
// the job's errors, and returns how many it rescued. Available, not
// retryable: a retryable job waits for the leader's scheduler, and after a
// crash the dead process may hold the leadership until its lease expires.
// The killed attempt counts, so a job that crashes its worker every time
// still ends in the dead letters.
func (w *Watchdog) RescueOrphans(ctx context.Context) (int, error) {
	w.init()
	now := w.Now().UTC()
	// Every row whose last beat is older than one interval is a candidate:
	// dead when silent past DeadAfter, or at once when it ran on this host
	// under a process id that no longer exists (a restart after a crash).
	quiet, err := w.Store.StaleWorkers(ctx, now.Add(-w.Interval))
	if err != nil {
		return 0, err
	}
	host, _ := os.Hostname()
	dead := map[string]store.Worker{}
	for _, q := range quiet {
		if q.ClientID == w.Client.ID() {
			continue
		}
		if q.HeartbeatAt.Before(now.Add(-w.DeadAfter)) || q.Host == host && !processExists(q.PID) {
			dead[q.ClientID] = q
		}
	}
	if len(dead) == 0 {
		return 0, nil
	}
	orphans, err := w.orphans(ctx, dead)
	if err != nil {
		return 0, err
	}
	if len(orphans) > 0 {
		if err := w.rescue(ctx, orphans, dead, now); err != nil {
			return 0, err
		}
	}
	for id := range dead {
		if err := w.Store.ForgetWorker(ctx, id); err != nil {
			return len(orphans), err
		}
	}
	return len(orphans), nil
}

func (w *Watchdog) orphans(ctx context.Context, dead map[string]store.Worker) ([]*rivertype.JobRow, error) {
	var out []*rivertype.JobRow
	params := river.NewJobListParams().States(rivertype.JobStateRunning).First(1000)
	for {
		res, err := w.Client.JobList(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("list running jobs: %w", err)
		}
		for _, j := range res.Jobs {
			if n := len(j.AttemptedBy); n > 0 {
				if _, ok := dead[j.AttemptedBy[n-1]]; ok {
					out = append(out, j)
				}
			}
		}
		if len(res.Jobs) < 1000 {
			return out, nil
		}
		params = params.After(res.LastCursor)
	}
}

func (w *Watchdog) rescue(ctx context.Context, jobs []*rivertype.JobRow, dead map[string]store.Worker, now time.Time) error {
	p := &riverdriver.JobRescueManyParams{StuckHorizon: now.Add(time.Second)}
	for _, j := range jobs {
		d := dead[j.AttemptedBy[len(j.AttemptedBy)-1]]
		msg, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: j.Attempt, Error: fmt.Sprintf(
			"worker %s (host %s, pid %d) stopped heartbeating at %s; job rescued by mull's watchdog",
			d.ClientID, d.Host, d.PID, d.HeartbeatAt.UTC().Format(time.RFC3339))})
		if err != nil {
			return err
		}
		state, finalized := rivertype.JobStateAvailable, (*time.Time)(nil)
		if j.Attempt >= j.MaxAttempts {
			state, finalized = rivertype.JobStateDiscarded, &now
		}
		p.ID = append(p.ID, j.ID)
		p.Error = append(p.Error, msg)
		p.FinalizedAt = append(p.FinalizedAt, finalized)
		p.ScheduledAt = append(p.ScheduledAt, now)
		p.State = append(p.State, string(state))
		w.Logger.Warn("rescuing job of dead worker", "job_id", j.ID, "kind", j.Kind, "worker", d.ClientID, "to", state)
	}
	if _, err := w.Client.Driver().GetExecutor().JobRescueMany(ctx, p); err != nil {
		return fmt.Errorf("rescue jobs: %w", err)
	}
	return nil
}
