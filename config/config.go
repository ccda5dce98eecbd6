// Package config holds mull's one configuration struct, its defaults, and the
// validation that runs before anything starts. Values come from defaults, then
// a TOML file, then MULL_* environment variables, then command-line flags; each
// later source overrides the earlier ones.
package config

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Config is everything mull can be told. Each field says its default.
type Config struct {
	// DataDir is where the embedded SQLite database lives.
	// Defaults to "./.mull". Env: MULL_DATA_DIR.
	DataDir string `toml:"data_dir"`

	// DatabaseURL chooses the database. Empty means SQLite at
	// DataDir/mull.db; "sqlite:PATH" is SQLite at PATH; "postgres://…" or
	// "postgresql://…" is PostgreSQL. Env: MULL_DATABASE_URL.
	DatabaseURL string `toml:"database_url" secret:"url"`

	// Listen is the HTTP address. Defaults to "127.0.0.1:7788". Env: MULL_LISTEN.
	Listen string `toml:"listen"`

	// AdminToken guards /v1/admin/* and /riverui/ as a bearer token. When
	// empty those routes answer only on loopback. Env: MULL_ADMIN_TOKEN.
	AdminToken string `toml:"admin_token" secret:"true"`

	// APIToken guards the API DSH uses (/v1/events, /v1/digest, /v1/memories…)
	// as a bearer token. Empty: no token needed. Env: MULL_API_TOKEN.
	APIToken string `toml:"api_token" secret:"true"`

	// HTTP says which Host names and listen addresses are accepted.
	HTTP HTTP `toml:"http"`

	// Log configures logging.
	Log Log `toml:"log"`

	// Workers configures the River workers.
	Workers Workers `toml:"workers"`

	// Jobs overrides a job kind's declared queue, attempts, backoff, timeout
	// or priority, keyed by kind (for example [jobs.probe]).
	Jobs map[string]JobOverride `toml:"jobs"`

	// Cron lists periodic jobs. Only River's elected leader enqueues them.
	Cron []Cron `toml:"cron"`

	// Retention says how long finished jobs are kept.
	Retention Retention `toml:"retention"`

	// LLM configures the DeepSeek client.
	LLM LLM `toml:"llm"`

	// Budget configures the daily token budgets.
	Budget Budget `toml:"budget"`

	// Ingest configures POST /v1/events.
	Ingest Ingest `toml:"ingest"`

	// DSH says where DSH's session logs are.
	DSH DSH `toml:"dsh"`

	// Import configures how DSH's session logs are read.
	Import Import `toml:"import"`

	// Memory configures the memory store.
	Memory Memory `toml:"memory"`

	// Digest configures the memory section DSH injects.
	Digest Digest `toml:"digest"`

	// Lessons configures how structured lessons reach the digest.
	Lessons Lessons `toml:"lessons"`

	// Learn says which sessions mull learns from on its own.
	Learn Learn `toml:"learn"`

	// Retro configures the retrospectives of sessions and errors.
	Retro Retro `toml:"retro"`

	// Consolidate configures sleep-time consolidation.
	Consolidate Consolidate `toml:"consolidate"`

	// Proposals says who decides the retros' proposals.
	Proposals Proposals `toml:"proposals"`

	// Reflection configures task reflection (seed 000).
	Reflection Reflection `toml:"reflection"`

	// Ledger configures the negative ledger (seed 003).
	Ledger Ledger `toml:"ledger"`
	// Harness configures harness refinement (seed 004).
	Harness Harness `toml:"harness"`
	// Bench configures A/B benchmark runs (seed 004's benchmark).
	Bench Bench `toml:"bench"`
	// Workspaces are per-workspace settings, keyed by workspace path (a
	// DSH cwd): [workspaces."/home/me/project"] scope = "global". They win
	// over the global keys and lose to the environment; the API's
	// (PUT /v1/admin/workspaces/{ws}/config) win over them. Reloaded
	// without a restart when the file changes.
	Workspaces map[string]WorkspaceConfig `toml:"workspaces"`
}

// Log configures logging.
type Log struct {
	// Level is debug, info, warn or error. Defaults to "info". Env: MULL_LOG_LEVEL.
	Level string `toml:"level"`
	// Format is auto, text or json. "auto" uses coloured text on a terminal
	// and JSON otherwise. Defaults to "auto". Env: MULL_LOG_FORMAT.
	Format string `toml:"format"`
}

// Workers configures the River client that works jobs.
type Workers struct {
	// Queues maps a queue name to its number of concurrent workers.
	// Defaults to {default = 10, llm = 4, maintenance = 2}.
	Queues map[string]int `toml:"queues"`

	// ShutdownGrace is how long running jobs may finish after SIGINT or
	// SIGTERM before they are cancelled (and retried later). Defaults to 30s.
	// Env: MULL_WORKERS_SHUTDOWN_GRACE.
	ShutdownGrace Duration `toml:"shutdown_grace"`

	// RescueStuckJobsAfter is when a running job whose worker died is made
	// available again. Zero means the longest job timeout plus a minute.
	// Env: MULL_WORKERS_RESCUE_STUCK_JOBS_AFTER.
	RescueStuckJobsAfter Duration `toml:"rescue_stuck_jobs_after"`

	// HeartbeatInterval is how often a worker process records that it is
	// alive and looks for dead ones. Defaults to 10s.
	// Env: MULL_WORKERS_HEARTBEAT_INTERVAL.
	HeartbeatInterval Duration `toml:"heartbeat_interval"`

	// DeadAfter is how long a worker process may go without a heartbeat
	// before its running jobs are rescued. A process on the same host whose
	// pid is gone is dead at once. Defaults to 45s. Env: MULL_WORKERS_DEAD_AFTER.
	DeadAfter Duration `toml:"dead_after"`

	// FetchCooldown is the least time between two fetches of one queue.
	// Defaults to 100ms. Env: MULL_WORKERS_FETCH_COOLDOWN.
	FetchCooldown Duration `toml:"fetch_cooldown"`

	// FetchPollInterval is how often queues are polled when no notification
	// arrives (SQLite always polls). Defaults to 1s.
	// Env: MULL_WORKERS_FETCH_POLL_INTERVAL.
	FetchPollInterval Duration `toml:"fetch_poll_interval"`
}

// JobOverride changes what a job kind declares. Zero fields keep the declared value.
type JobOverride struct {
	Queue       string   `toml:"queue"`
	MaxAttempts int      `toml:"max_attempts"`
	Backoff     Duration `toml:"backoff"`
	Timeout     Duration `toml:"timeout"`
	Priority    int      `toml:"priority"`
}

// Cron is one periodic job.
type Cron struct {
	// Name identifies the entry; it must be unique. Defaults to the kind.
	Name string `toml:"name"`
	// Schedule is a standard five-field cron expression or a descriptor such
	// as "@hourly". "CRON_TZ=Zone " may lead it; without it the schedule is UTC.
	Schedule string `toml:"schedule"`
	// Kind is the job kind to enqueue.
	Kind string `toml:"kind"`
	// Args is the job's arguments as a JSON object. Defaults to "{}".
	Args string `toml:"args"`
	// RunOnStart also enqueues one job when a leader is elected.
	RunOnStart bool `toml:"run_on_start"`
}

// Retention says how long River keeps finished jobs.
type Retention struct {
	// Completed jobs are deleted after this. Defaults to 24h.
	Completed Duration `toml:"completed"`
	// Cancelled jobs are deleted after this. Defaults to 720h (30 days).
	Cancelled Duration `toml:"cancelled"`
	// Discarded jobs are the dead letters. Zero (the default) keeps them
	// until an operator purges them.
	Discarded Duration `toml:"discarded"`
}

// Default returns the configuration used when nothing is set.
func Default() Config {
	var c Config
	return c.WithDefaults()
}

// WithDefaults fills every unset field with its default.
func (c Config) WithDefaults() Config {
	c.DataDir = cmp.Or(c.DataDir, "./.mull")
	c.Listen = cmp.Or(c.Listen, "127.0.0.1:7788")
	c.Log.Level = cmp.Or(c.Log.Level, "info")
	c.Log.Format = cmp.Or(c.Log.Format, "auto")
	if c.Workers.Queues == nil {
		c.Workers.Queues = map[string]int{"default": 10, "llm": 4, "maintenance": 2}
	}
	c.Workers.ShutdownGrace = cmp.Or(c.Workers.ShutdownGrace, Duration(30*time.Second))
	c.Workers.HeartbeatInterval = cmp.Or(c.Workers.HeartbeatInterval, Duration(10*time.Second))
	c.Workers.DeadAfter = cmp.Or(c.Workers.DeadAfter, Duration(45*time.Second))
	c.Workers.FetchCooldown = cmp.Or(c.Workers.FetchCooldown, Duration(100*time.Millisecond))
	c.Workers.FetchPollInterval = cmp.Or(c.Workers.FetchPollInterval, Duration(time.Second))
	c.Retention.Completed = cmp.Or(c.Retention.Completed, Duration(24*time.Hour))
	c.Retention.Cancelled = cmp.Or(c.Retention.Cancelled, Duration(720*time.Hour))
	c.LLM = c.LLM.withDefaults()
	c.Budget = c.Budget.withDefaults()
	c.Ingest = c.Ingest.withDefaults()
	c.DSH = c.DSH.withDefaults()
	c.Import = c.Import.withDefaults()
	c.Memory = c.Memory.withDefaults()
	c.Digest = c.Digest.withDefaults()
	c.Lessons = c.Lessons.withDefaults()
	c.Learn = c.Learn.withDefaults()
	c.Retro = c.Retro.withDefaults()
	c.Consolidate = c.Consolidate.withDefaults()
	c.Reflection = c.Reflection.withDefaults()
	c.Ledger = c.Ledger.withDefaults()
	c.Harness = c.Harness.withDefaults()
	c.Bench = c.Bench.withDefaults()
	for i := range c.Cron {
		c.Cron[i].Name = cmp.Or(c.Cron[i].Name, c.Cron[i].Kind)
		c.Cron[i].Args = cmp.Or(c.Cron[i].Args, "{}")
	}
	return c
}

// Error is a configuration problem: which key, and what is wrong with it.
type Error struct {
	Key     string
	Problem string
}

func (e *Error) Error() string { return e.Key + ": " + e.Problem }

func bad(key, format string, args ...any) *Error {
	return &Error{Key: key, Problem: fmt.Sprintf(format, args...)}
}

// Validate reports the first problem found, as an *Error.
func (c Config) Validate() error {
	if c.DataDir == "" {
		return bad("data_dir", "must not be empty")
	}
	if _, err := ParseDatabaseURL(c.DatabaseURL, c.DataDir); err != nil {
		return bad("database_url", "%v", err)
	}
	if err := validateListen(c.Listen); err != nil {
		return bad("listen", "%v", err)
	}
	if err := c.HTTP.validate(); err != nil {
		return err
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, strings.ToLower(c.Log.Level)) {
		return bad("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	if !slices.Contains([]string{"auto", "text", "json"}, strings.ToLower(c.Log.Format)) {
		return bad("log.format", "%q is not one of auto, text, json", c.Log.Format)
	}
	if err := c.Workers.validate(); err != nil {
		return err
	}
	for _, kind := range slices.Sorted(maps.Keys(c.Jobs)) {
		if err := c.Jobs[kind].validate("jobs." + kind); err != nil {
			return err
		}
	}
	if err := validateCron(c.Cron); err != nil {
		return err
	}
	if err := c.Retention.validate(); err != nil {
		return err
	}
	if err := c.LLM.validate(); err != nil {
		return err
	}
	if err := c.Budget.validate(); err != nil {
		return err
	}
	for _, v := range []func() error{c.Ingest.validate, c.DSH.validate, c.Import.validate, c.Memory.validate, c.Digest.validate, c.Lessons.validate, c.Learn.validate, c.Retro.validate, c.Consolidate.validate, c.Reflection.validate, c.Ledger.validate, c.Harness.validate, c.Bench.validate} {
		if err := v(); err != nil {
			return err
		}
	}
	return c.validateWorkspaces()
}

func (w Workers) validate() error {
	if len(w.Queues) == 0 {
		return bad("workers.queues", "at least one queue is needed")
	}
	for _, q := range slices.Sorted(maps.Keys(w.Queues)) {
		if err := validateQueueName(q); err != nil {
			return bad("workers.queues."+q, "%v", err)
		}
		if n := w.Queues[q]; n < 1 || n > 10000 {
			return bad("workers.queues."+q, "worker count %d must be between 1 and 10000", n)
		}
	}
	for key, d := range map[string]Duration{
		"workers.shutdown_grace":          w.ShutdownGrace,
		"workers.rescue_stuck_jobs_after": w.RescueStuckJobsAfter,
		"workers.fetch_cooldown":          w.FetchCooldown,
		"workers.heartbeat_interval":      w.HeartbeatInterval,
		"workers.dead_after":              w.DeadAfter,
		"workers.fetch_poll_interval":     w.FetchPollInterval,
	} {
		if d < 0 {
			return bad(key, "must not be negative, got %s", d)
		}
	}
	if w.DeadAfter > 0 && w.DeadAfter <= w.HeartbeatInterval {
		return bad("workers.dead_after", "must be longer than workers.heartbeat_interval (%s), got %s", w.HeartbeatInterval, w.DeadAfter)
	}
	if w.FetchCooldown > 0 && time.Duration(w.FetchCooldown) < time.Millisecond {
		return bad("workers.fetch_cooldown", "must be at least 1ms, got %s", w.FetchCooldown)
	}
	if w.FetchPollInterval > 0 && time.Duration(w.FetchPollInterval) < time.Millisecond {
		return bad("workers.fetch_poll_interval", "must be at least 1ms, got %s", w.FetchPollInterval)
	}
	return nil
}

func (o JobOverride) validate(key string) error {
	if o.Queue != "" {
		if err := validateQueueName(o.Queue); err != nil {
			return bad(key+".queue", "%v", err)
		}
	}
	if o.MaxAttempts < 0 || o.MaxAttempts > 1000 {
		return bad(key+".max_attempts", "must be between 1 and 1000, got %d", o.MaxAttempts)
	}
	if o.Backoff < 0 {
		return bad(key+".backoff", "must not be negative, got %s", o.Backoff)
	}
	if o.Timeout < 0 {
		return bad(key+".timeout", "must not be negative, got %s", o.Timeout)
	}
	if o.Priority < 0 || o.Priority > 4 {
		return bad(key+".priority", "must be between 1 and 4, got %d", o.Priority)
	}
	return nil
}

func (r Retention) validate() error {
	for key, d := range map[string]Duration{
		"retention.completed": r.Completed,
		"retention.cancelled": r.Cancelled,
		"retention.discarded": r.Discarded,
	} {
		if d < 0 {
			return bad(key, "must not be negative, got %s", d)
		}
	}
	return nil
}

func validateQueueName(q string) error {
	if q == "" || len(q) > 128 {
		return fmt.Errorf("queue name must be 1 to 128 characters")
	}
	for _, r := range q {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("queue name %q may hold only a-z, 0-9, '_' and '-'", q)
		}
	}
	return nil
}
