package engine

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
)

// Client is the River client every part of mull uses: one transaction type,
// *sql.Tx, on SQLite and Postgres alike.
type Client = river.Client[*sql.Tx]

// ClientOptions are what NewClient needs besides the driver and registry.
type ClientOptions struct {
	Config config.Config
	Logger *slog.Logger
	// Work makes a client that fetches and works jobs. Without it the client
	// only inserts and manages jobs (the CLI, and `serve --workers=false`).
	Work bool
	// Builtin are periodic jobs mull always runs, besides the config's:
	// mull passes the registry's (Registry.Builtin, what its kinds declared
	// with Registry.Cron); tests usually pass none.
	Builtin []config.Cron
	// Test makes River's clocks and IDs deterministic where it can.
	Test river.TestConfig
}

// NewClient builds the River client from the config and registry.
func NewClient(drv riverdriver.Driver[*sql.Tx], reg *Registry, opts ClientOptions) (*Client, error) {
	cfg := opts.Config
	if err := reg.CheckOverrides(); err != nil {
		return nil, err
	}
	rc := &river.Config{
		Logger:                      opts.Logger.With("component", "river"),
		Workers:                     reg.Workers(),
		JobInsertMiddleware:         []rivertype.JobInsertMiddleware{reg.InsertMiddleware()},
		CompletedJobRetentionPeriod: cfg.Retention.Completed.D(),
		CancelledJobRetentionPeriod: cfg.Retention.Cancelled.D(),
		DiscardedJobRetentionPeriod: -1, // dead letters stay until purged
		JobTimeout:                  time.Minute,
		FetchCooldown:               cfg.Workers.FetchCooldown.D(),
		FetchPollInterval:           cfg.Workers.FetchPollInterval.D(),
		RescueStuckJobsAfter:        RescueAfter(cfg, reg),
		Test:                        opts.Test,
	}
	if cfg.Retention.Discarded > 0 {
		rc.DiscardedJobRetentionPeriod = cfg.Retention.Discarded.D()
	}
	if opts.Work {
		rc.Queues = map[string]river.QueueConfig{}
		for q, n := range cfg.Workers.Queues {
			rc.Queues[q] = river.QueueConfig{MaxWorkers: n}
		}
		for _, q := range reg.Queues() {
			if _, ok := rc.Queues[q]; !ok {
				return nil, &config.Error{Key: "workers.queues", Problem: fmt.Sprintf(
					"queue %q is used by a job kind but has no workers (configured: %v)", q, slices.Sorted(maps.Keys(cfg.Workers.Queues)))}
			}
		}
		builtin, err := Periodic(opts.Builtin, reg)
		if err != nil {
			return nil, fmt.Errorf("built-in cron: %w", err)
		}
		for i, c := range cfg.Cron {
			for _, b := range opts.Builtin {
				if c.Name == b.Name {
					return nil, &config.Error{Key: fmt.Sprintf("cron[%d].name", i), Problem: fmt.Sprintf("%q is a built-in entry's name", c.Name)}
				}
			}
		}
		periodic, err := Periodic(cfg.Cron, reg)
		if err != nil {
			return nil, err
		}
		rc.PeriodicJobs = append(builtin, periodic...)
	}
	c, err := river.NewClient(drv, rc)
	if err != nil {
		return nil, err
	}
	reg.client.CompareAndSwap(nil, c)
	return c, nil
}

// RescueAfter is how long a running job may go unheard before River makes it
// available again: the config's value, or the longest job timeout plus a
// minute, so a live job is never rescued from under its worker.
func RescueAfter(cfg config.Config, reg *Registry) time.Duration {
	if d := cfg.Workers.RescueStuckJobsAfter.D(); d > 0 {
		return d
	}
	return max(reg.LongestTimeout(), time.Minute) + time.Minute
}

// rawArgs is a job whose args are JSON from config; it lets cron entries
// enqueue any registered kind.
type rawArgs struct {
	kind string
	args json.RawMessage
}

func (a rawArgs) Kind() string                 { return a.kind }
func (a rawArgs) MarshalJSON() ([]byte, error) { return a.args, nil }
