// Package jobs registers every job kind mull works, and is the one place
// that does: Register adds each kind's worker, and hands back what the rest
// of the process needs from the kinds (the ingest service whose hooks are
// theirs, and the built-in cron entries they declared). Each kind lives in
// its own package under jobs/ (or workflows/), holding its Args, Spec and
// Worker, and declaring there what else it needs.
//
// # Adding a job kind
//
// A kind is one package plus one line here. Make a package jobs/<name>
// holding:
//
//   - Args, with a value-receiver Kind() returning the kind: snake_case and
//     stable (it is stored with every job). This is the only place the
//     kind is spelled: engine.Add reads it from the Args type, and the
//     registry's lookups (Spec, Specs, cron entries) derive from it.
//   - Spec, an engine.Spec: queue, attempts, backoff, timeout, priority;
//     LLM when the kind calls DeepSeek (it then pauses without a key).
//   - Worker, a river.Worker[Args].
//   - When the kind needs more than its worker, a Register(reg, ...) func
//     that calls engine.Add and declares the rest on the registry:
//     reg.Cron(name, schedule, Args{}) for a built-in periodic job, and
//     reg.OnSessionEnded(hook), reg.OnAgentError(hook), reg.OnTurnEnded(hook)
//     or reg.OnEvent(type, hook) for what storing events should enqueue (inside
//     the ingest transaction, with
//     client.InsertTx). A kind package never imports jobs.
//
// Then add ONE line to Register below, building the worker from Deps:
// engine.Add(reg, name.Spec, &name.Worker{...}), or name.Register(reg, ...)
// for a kind with cron entries or hooks. Config keys are in Deps.Config;
// add a Deps field only for a dependency no kind had before.
//
// Test the kind in its package, on SQLite and Postgres (storetest.Each),
// and add it to allKinds in jobs_test.go (its cron entry or hooks to
// TestRegister's expectations): TestRegister checks that every kind has a
// spec and a worker, and that the cron entries and hooks reach the app
// through Register and nothing else.
//
// Hooks run in the order Register adds them: the retros' before
// consolidation's, so a session's retro is enqueued before the
// consolidation it may trigger.
package jobs

import (
	"log/slog"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/budgetsweep"
	"github.com/mullhq/mull/jobs/consolidate"
	"github.com/mullhq/mull/jobs/ledgersweep"
	"github.com/mullhq/mull/jobs/llmprobe"
	"github.com/mullhq/mull/jobs/probe"
	"github.com/mullhq/mull/jobs/refinereview"
	"github.com/mullhq/mull/jobs/retroerror"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/jobs/sessionidle"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
	"github.com/mullhq/mull/wsconfig"
)

// Deps are what job workers are built from.
type Deps struct {
	Store  *store.Store
	Logger *slog.Logger
	LLM    *llm.Client
	Ledger *budget.Ledger
	// Runner runs the workflows (consolidation's steps, the demo).
	Runner *workflows.Runner
	// Config is the loaded configuration (with defaults): each kind reads
	// its own keys from it.
	Config config.Config
	// Workspaces give each workspace's own settings (scope, retro and
	// reflection switches, ledger mode, digest quotas), asked when a job
	// starts. Nil: the config's for every workspace.
	Workspaces *wsconfig.Service
}

// retroWorkspaces is d.Workspaces as the retro workers take it (nil stays
// nil).
func (d Deps) retroWorkspaces() retrosession.Workspaces {
	if d.Workspaces == nil {
		return nil
	}
	return d.Workspaces
}

// memories is a memories.Service over d's store and config that asks
// d.Workspaces for each workspace's scope and quotas.
func (d Deps) memories() *memories.Service {
	m := memories.New(d.Store, d.Config.Memory, d.Config.Digest)
	if d.Workspaces != nil {
		m.WithWorkspaces(d.Workspaces)
	}
	return m
}

// negledger is the negative ledger over d's store and config, asking
// d.Workspaces for each workspace's mode.
func (d Deps) negledger() *negledger.Service {
	n := negledger.New(d.Store, d.Config.Ledger, d.Logger.With("component", "ledger"))
	if d.Workspaces != nil {
		n.WithModes(func(ws string) string { return d.Workspaces.Effective(ws).LedgerMode() })
	}
	return n
}

// Wiring is what Register hands back to the process.
type Wiring struct {
	// Ingest stores event batches (the API, the importer) and ends idle
	// sessions (session_idle); its hooks are Hooks.
	Ingest *ingest.Service
	// Hooks are every kind's ingest hooks, chained in registration order.
	// They enqueue with the first client engine.NewClient builds over the
	// registry, looked up when they run, so they can exist before it.
	Hooks ingest.Hooks
	// Cron are the built-in periodic jobs the kinds declared: pass them as
	// engine.ClientOptions.Builtin.
	Cron []config.Cron
}

// Register adds every job kind's worker to the registry, with what each
// kind declared besides (cron entries, ingest hooks), and returns the
// wiring built from them.
func Register(reg *engine.Registry, d Deps) Wiring {
	cfg := d.Config
	hooks := ingest.Hooks{SessionEnded: reg.SessionEnded, AgentError: reg.AgentError, Event: reg.Event, Hooked: reg.EventHooked,
		MaxSessionAge: cfg.Learn.MaxSessionAge.D(), Client: reg.Client}
	svc := ingest.New(d.Store, hooks)
	scope, caps := memory.Scope(cfg.Memory.Scope), RetroCaps(cfg.Retro.Excerpt)

	workflows.Register(reg, d.Runner)
	engine.Add(reg, probe.Spec, &probe.Worker{})
	engine.Add(reg, llmprobe.Spec, &llmprobe.Worker{LLM: d.LLM, Logger: d.Logger})
	budgetsweep.Register(reg, &budgetsweep.Worker{Ledger: d.Ledger, Store: d.Store, Hold: d.LLM.Hold(),
		KeepPrompts: d.LLM.KeepPrompts(), Logger: d.Logger})
	noGate := !cfg.Reflection.GateOn()
	engine.Add(reg, retrosession.Spec, &retrosession.Worker{Store: d.Store, LLM: d.LLM, Logger: d.Logger, Scope: scope, Caps: caps,
		NoPrecedentGate: noGate, Workspaces: d.retroWorkspaces()})
	retroerror.Register(reg, &retroerror.Worker{Store: d.Store, LLM: d.LLM, Logger: d.Logger, Scope: scope, Caps: caps,
		NoPrecedentGate: noGate, Workspaces: d.retroWorkspaces()},
		&retroerror.Hook{Store: d.Store, Logger: d.Logger.With("component", "retro_error"), Rules: retroerror.Rules{
			Debounce: cfg.Retro.ErrorDelay.D(), MinGap: cfg.Retro.ErrorMinGap.D(), MaxPerSession: cfg.Retro.ErrorMaxPerSession}})
	sessionidle.Register(reg, &sessionidle.Worker{Ingest: svc, Idle: cfg.Ingest.IdleTimeout.D(), Logger: d.Logger})
	registerReflectTask(reg, d, svc)
	consolidate.Register(reg, consolidate.Deps{Store: d.Store, LLM: d.LLM, Runner: d.Runner,
		Logger: d.Logger.With("component", "consolidate"), Settings: consolidate.SettingsFrom(cfg.Consolidate)})
	ledgersweep.Register(reg, &ledgersweep.Worker{Ledger: d.negledger(),
		Logger: d.Logger.With("component", "ledger_sweep")})
	refinereview.Register(reg, &refinereview.Worker{Store: d.Store, LLM: d.LLM, Config: cfg.Harness, Logger: d.Logger.With("component", "refine_review"),
		Harness: harnesses.New(d.Store, cfg.Harness, d.Logger.With("component", "harness"))},
		&refinereview.Hook{Store: d.Store, Config: cfg.Harness, Logger: d.Logger.With("component", "refine_review")})
	registerBench(reg, d)

	return Wiring{Ingest: svc, Hooks: hooks, Cron: reg.Builtin()}
}

// RetroCaps are the retros' excerpt caps from config retro.excerpt.
func RetroCaps(e config.Excerpt) retro.Caps {
	return retro.Caps{Errors: e.Errors, ToolFailures: e.ToolFailures, Feedback: e.Feedback,
		Transcript: e.Transcript, MaxChars: e.MaxChars, ItemChars: e.ItemChars}
}
