package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs"
	"github.com/mullhq/mull/jobs/consolidate"
	"github.com/mullhq/mull/jobs/retroerror"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// builtinCron are periodic jobs every worker runs whatever the config says.
var builtinCron = []config.Cron{
	// Fails runs whose step jobs died where no step code could record it
	// (a worker killed on a last attempt, an operator's cancel in River UI).
	{Name: "workflow-reconcile", Kind: "workflow_reconcile", Schedule: "@every 1m", Args: "{}"},
	// Releases budget reservations a dead process never settled.
	{Name: "budget-sweep", Kind: "budget_sweep", Schedule: "@every 5m", Args: "{}"},
	// Ends sessions silent past ingest.idle_timeout, running their end hooks.
	{Name: "session-idle", Kind: "session_idle", Schedule: "@every 1m", Args: "{}"},
}

// app is everything a command builds from the config.
type app struct {
	cfg    config.Config
	log    *slog.Logger
	store  *store.Store
	reg    *engine.Registry
	client *engine.Client
	runner *workflows.Runner
	ledger *budget.Ledger
	llm    *llm.Client
	// ingest stores event batches for the API and the importer, and ends
	// idle sessions for the session_idle job.
	ingest *ingest.Service
	// memories is the memory store's service, for the API and the CLI.
	memories *memories.Service
}

// appMode says how much of mull a command needs.
type appMode int

const (
	// manage opens an insert-only client on a database that must already
	// be migrated (operator commands).
	manage appMode = iota
	// work migrates, then builds a client that works jobs (serve, worker).
	work
	// serveOnly migrates, then builds an insert-only client (serve --workers=false).
	serveOnly
)

// open builds the app. The caller closes it. edit, when given, adjusts the
// loaded configuration first (serve --fake-llm points the LLM at its fake).
func (g *globals) open(ctx context.Context, mode appMode, edit ...func(*config.Config)) (*app, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	for _, e := range edit {
		e(&cfg)
	}
	a := &app{cfg: cfg, log: newLogger(cfg, g.stderr)}
	db, err := config.ParseDatabaseURL(cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, &config.Error{Key: "database_url", Problem: err.Error()}
	}
	if a.store, err = store.Open(ctx, db); err != nil {
		return nil, err
	}
	if err := a.prepare(ctx, mode); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

func (a *app) prepare(ctx context.Context, mode appMode) error {
	if mode == manage {
		n, err := a.store.MigrationsPending(ctx)
		if err != nil {
			return fmt.Errorf("check migrations on %s: %w", a.store.Where, err)
		}
		switch {
		case n > 0 && a.store.Dialect == store.SQLite:
			// An embedded database is this machine's own: migrate it, as
			// serve would, so a first command on a new data dir works.
			steps, err := a.store.Migrate(ctx, false)
			if err != nil {
				return err
			}
			a.log.Info("migrated the SQLite database", "database", a.store.Where, "migrations", len(steps))
		case n > 0:
			// PostgreSQL is shared by other processes, maybe of another
			// mull version: migrating is for an operator's 'mull migrate'.
			return fmt.Errorf("%s has %d pending migrations; run 'mull migrate' first (mull migrates PostgreSQL only when asked, or when 'mull serve' or 'mull worker' starts)", a.store.Where, n)
		}
	} else {
		steps, err := a.store.Migrate(ctx, false)
		if err != nil {
			return err
		}
		for _, s := range steps {
			a.log.Info("migration applied", "line", s.Line, "version", s.Version, "name", s.Name, "duration", s.Duration)
		}
	}
	a.reg = engine.NewRegistry(a.cfg.Jobs)
	a.runner = workflows.New(a.store, a.log)
	workflows.Register(a.reg, a.runner)
	var err error
	if a.ledger, err = budget.New(a.store, a.cfg.Budget, budget.WithLogger(a.log.With("component", "budget"))); err != nil {
		return err
	}
	a.llm = llm.New(llm.Options{Config: a.cfg.LLM, Ledger: a.ledger, Calls: a.store, Logger: a.log.With("component", "llm")})
	// One hook spaces a session's retros: its session retro (which folds
	// in an error retro due at its end) and its error retros.
	retros := &retroerror.Hook{Store: a.store, Logger: a.log.With("component", "retro_error"), Rules: retroerror.Rules{
		Debounce: a.cfg.Retro.ErrorDelay.D(), MinGap: a.cfg.Retro.ErrorMinGap.D(), MaxPerSession: a.cfg.Retro.ErrorMaxPerSession,
	}}
	a.ingest = ingest.New(a.store, ingest.Hooks{
		SessionEnded: sessionEnded(retros.SessionEnded,
			(&consolidate.Hook{Store: a.store, Settings: consolidate.SettingsFrom(a.cfg.Consolidate)}).SessionEnded),
		AgentError:    retros.AgentError,
		MaxSessionAge: a.cfg.Learn.MaxSessionAge.D(),
	})
	a.memories = memories.New(a.store, a.cfg.Memory, a.cfg.Digest).WithLessons(a.cfg.Lessons, a.cfg.Reflection)
	consolidate.Register(a.reg, consolidate.Deps{Store: a.store, LLM: a.llm, Runner: a.runner,
		Logger: a.log.With("component", "consolidate"), Settings: consolidate.SettingsFrom(a.cfg.Consolidate)})
	jobs.Register(a.reg, jobs.Deps{Store: a.store, Logger: a.log, LLM: a.llm, Ledger: a.ledger,
		Ingest: a.ingest, IdleTimeout: a.cfg.Ingest.IdleTimeout.D(), MemoryScope: a.cfg.Memory.Scope,
		RetroCaps: retroCaps(a.cfg.Retro.Excerpt)})
	a.client, err = engine.NewClient(a.store.Driver(), a.reg, engine.ClientOptions{
		Config: a.cfg, Logger: a.log, Work: mode == work,
		Builtin: a.builtinCron(),
	})
	if err != nil {
		return err
	}
	// The service was built before the client (its worker is registered
	// above); its hooks enqueue with this client.
	a.ingest.UseClient(a.client)
	return nil
}

// builtinCron is what every worker runs besides the config's [[cron]]:
// the maintenance jobs and, unless consolidate.schedule is "off", the
// nightly consolidation sweep.
func (a *app) builtinCron() []config.Cron {
	return append(slices.Clone(builtinCron), consolidate.Cron(a.cfg.Consolidate)...)
}

func (a *app) close() {
	if a.store != nil {
		_ = a.store.Close()
	}
}

// sessionEnded runs several session-end hooks in order, in the ingest
// transaction: the first error rolls the batch back.
func sessionEnded(hooks ...func(context.Context, *sql.Tx, *engine.Client, store.Session) error) func(context.Context, *sql.Tx, *engine.Client, store.Session) error {
	return func(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session) error {
		for _, h := range hooks {
			if err := h(ctx, tx, client, s); err != nil {
				return err
			}
		}
		return nil
	}
}

// retroCaps are the retros' excerpt caps from config retro.excerpt.
func retroCaps(e config.Excerpt) retro.Caps {
	return retro.Caps{Errors: e.Errors, ToolFailures: e.ToolFailures, Feedback: e.Feedback,
		Transcript: e.Transcript, MaxChars: e.MaxChars, ItemChars: e.ItemChars}
}
