// Package consolidate is sleep-time consolidation as durable jobs: the
// consolidate job plans one run for a workspace (find near-duplicate
// clusters among what changed since its watermark, cheaply, with
// learn/consolidate), and starts it as a workflow whose steps are the
// merge chunks (one LLM call each, applied with the step's completion) and
// a final derive step (principles, hypotheses, prefetch; it advances the
// watermark). A crash loses at most the chunk in flight: finished chunks
// are never asked again. The consolidate_sweep job (cron, off-peak) and the
// session-end hook (N sessions since the last run) enqueue planners.
package consolidate

import (
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// Why a planner was enqueued. Only a manual run skips the cooldown.
const (
	ReasonCron     = "cron"
	ReasonSessions = "sessions"
	ReasonManual   = "manual"
)

// Args are a consolidate (planner) job's arguments.
type Args struct {
	Workspace string `json:"workspace"`
	Reason    string `json:"reason"`
	// Requested makes each manual run a distinct job (the CLI sets a fresh
	// value); cron and session triggers leave it empty, so a trigger that
	// fires while one of theirs waits adds nothing.
	Requested string `json:"requested,omitempty"`
	// DryRun plans and records the plan in the workspace's note without
	// starting a run or calling the model.
	DryRun bool `json:"dry_run,omitempty"`
}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "consolidate" }

// InsertOpts: unique by args among jobs not finished yet, so two triggers
// of one workspace while a planner waits enqueue one.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

// Spec: the planner reads the library and clusters it locally; no LLM.
var Spec = engine.Spec{Queue: "default", MaxAttempts: 5, Backoff: time.Minute, Timeout: 5 * time.Minute}

// Settings are the consolidate config the jobs read.
type Settings struct {
	// Cooldown is the least time between two runs not asked for by hand.
	Cooldown time.Duration
	// AfterSessions: sessions ended since the last run that trigger one.
	AfterSessions int
	// ChunkChars caps one merge call's memory text.
	ChunkChars int
	// MinMemories: fewer live memories get no derived ones.
	MinMemories int
	// DeriveChars caps the derive call's memory text (consolidate.derive_chars).
	DeriveChars int
	// TriggerDelay is how long after the Nth session end its run is
	// planned, so that session's retro lands first
	// (consolidate.trigger_delay).
	TriggerDelay time.Duration
	// Schedule is consolidate.schedule, the sweep's built-in cron entry;
	// "off" (or empty) declares none.
	Schedule string
}

// SettingsFrom reads the config.
func SettingsFrom(c config.Consolidate) Settings {
	return Settings{Cooldown: c.Cooldown.D(), AfterSessions: c.AfterSessions, ChunkChars: c.ChunkChars, MinMemories: c.MinMemories,
		DeriveChars: c.DeriveChars, TriggerDelay: c.TriggerDelay.D(), Schedule: c.Schedule}
}

func (s Settings) withDefaults() Settings {
	d := SettingsFrom(config.Config{}.WithDefaults().Consolidate)
	if s.Cooldown < 0 {
		s.Cooldown = 0
	}
	if s.AfterSessions <= 0 {
		s.AfterSessions = d.AfterSessions
	}
	if s.ChunkChars <= 0 {
		s.ChunkChars = d.ChunkChars
	}
	if s.MinMemories <= 0 {
		s.MinMemories = d.MinMemories
	}
	if s.DeriveChars <= 0 {
		s.DeriveChars = d.DeriveChars
	}
	if s.TriggerDelay <= 0 {
		s.TriggerDelay = d.TriggerDelay
	}
	return s
}

// Deps are what the consolidate jobs are built from.
type Deps struct {
	Store    *store.Store
	LLM      *llm.Client
	Runner   *workflows.Runner
	Logger   *slog.Logger
	Settings Settings
}

// Register adds the planner, the two step kinds and the sweep, the
// session-end hook that counts toward the "N sessions" trigger, and the
// sweep's built-in cron entry (Settings.Schedule) unless it is off.
func Register(reg *engine.Registry, d Deps) {
	d.Settings = d.Settings.withDefaults()
	engine.Add(reg, Spec, &Planner{d: d})
	engine.Add(reg, SweepSpec, &Sweep{d: d})
	workflows.AddStep(reg, d.Runner, MergeSpec, d.merge)
	workflows.AddStep(reg, d.Runner, DeriveSpec, d.derive)
	reg.OnSessionEnded((&Hook{Store: d.Store, Settings: d.Settings}).SessionEnded)
	if s := d.Settings.Schedule; s != "" && !(config.Consolidate{Schedule: s}).Off() {
		reg.Cron("consolidate-sweep", s, SweepArgs{})
	}
}
