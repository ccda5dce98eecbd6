// Package sessionidle ends DSH sessions that went silent: DSH does not
// always say a session ended (agent/disposed does not fire in headless
// runs), so a session with no event for ingest.idle_timeout is marked idle
// and its session-end jobs run as if it had ended.
package sessionidle

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/ingest"
)

// Args: none; the built-in cron entry "session-idle" enqueues one a minute.
type Args struct{}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "session_idle" }

// Spec: maintenance work, retried quickly; the next tick comes soon anyway.
var Spec = engine.Spec{Queue: "maintenance", MaxAttempts: 3, Backoff: 10 * time.Second, Timeout: time.Minute}

// Register adds session_idle and its built-in cron entry, every minute.
func Register(reg *engine.Registry, w *Worker) {
	engine.Add(reg, Spec, w)
	reg.Cron("session-idle", "@every 1m", Args{})
}

// Worker sweeps for idle sessions.
type Worker struct {
	river.WorkerDefaults[Args]
	Ingest *ingest.Service
	// Idle is ingest.idle_timeout.
	Idle   time.Duration
	Logger *slog.Logger
}

// Work ends the sessions silent for longer than Idle.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	n, err := w.Ingest.EndIdle(ctx, w.Idle)
	if n > 0 {
		w.Logger.Info("ended idle sessions", "count", n, "idle_timeout", w.Idle.String())
	}
	return err
}
