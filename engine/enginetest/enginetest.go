// Package enginetest starts real River clients on a test store and waits for
// jobs through River's event subscription, never by sleeping.
package enginetest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
)

// Config is a config tuned for tests: fast fetches and polls.
func Config() config.Config {
	c := config.Default()
	c.Workers.FetchCooldown = config.Duration(5 * time.Millisecond)
	c.Workers.FetchPollInterval = config.Duration(20 * time.Millisecond)
	return c
}

// Logger discards logs unless MULL_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("MULL_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Start builds a working client and starts it; it is stopped when t ends.
func Start(t testing.TB, s *store.Store, reg *engine.Registry, cfg config.Config) *engine.Client {
	t.Helper()
	c := NewClient(t, s, reg, cfg, true)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("enginetest: start client: %v", err)
	}
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(stopCtx)
	})
	return c
}

// NewClient builds a client without starting it.
func NewClient(t testing.TB, s *store.Store, reg *engine.Registry, cfg config.Config, work bool) *engine.Client {
	t.Helper()
	c, err := engine.NewClient(s.Driver(), reg, engine.ClientOptions{Config: cfg, Logger: Logger(), Work: work})
	if err != nil {
		t.Fatalf("enginetest: new client: %v", err)
	}
	return c
}

// Events subscribes to every final and retry event; call before inserting
// the jobs you wait for.
func Events(t testing.TB, c *engine.Client) <-chan *river.Event {
	t.Helper()
	ch, cancel := c.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed,
		river.EventKindJobCancelled, river.EventKindJobSnoozed)
	t.Cleanup(cancel)
	return ch
}

// WaitFinal waits until job id reaches a final state (completed, cancelled
// or discarded) and returns its row as the event carried it. It waits as
// long as the test's deadline allows (testwait.Patience).
func WaitFinal(t testing.TB, events <-chan *river.Event, id int64) *rivertype.JobRow {
	t.Helper()
	timeout := testwait.Patience(t)
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-events:
			if ev.Job.ID != id {
				continue
			}
			switch ev.Job.State {
			case rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
				return ev.Job
			}
		case <-deadline:
			t.Fatalf("enginetest: job %d not final after %s", id, timeout)
			return nil
		}
	}
}

// WaitFor waits until pred accepts an event and returns that event, as
// long as the test's deadline allows (testwait.Patience).
func WaitFor(t testing.TB, events <-chan *river.Event, pred func(*river.Event) bool) *river.Event {
	t.Helper()
	timeout := testwait.Patience(t)
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-events:
			if pred(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("enginetest: no matching event after %s", timeout)
			return nil
		}
	}
}
