package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/tasks"
	"github.com/mullhq/mull/workflows"
	"github.com/mullhq/mull/wsconfig"
)

// app is everything a command builds from the config.
type app struct {
	cfg config.Config
	// src is where cfg came from: the config watcher reloads the file.
	src    config.Source
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
	// tasks opens, closes and reflects on tasks, for the API and the CLI.
	tasks *tasks.Service
	// negledger is the negative ledger (seed 003), for the API, the CLI
	// and ledger_sweep.
	negledger *negledger.Service
	// harness is harness refinement (seed 004), for the API and the CLI.
	harness *harnesses.Service
	// bench is A/B benchmark runs (seed 004's benchmark), for the API and
	// the CLI.
	bench *benches.Service
	// workspaces are the per-workspace settings (issue 16), for the API,
	// the CLI, the jobs, the digest and the ledgers.
	workspaces *wsconfig.Service
	// builtin are the periodic jobs every worker runs whatever the config
	// says: what the job kinds declared (jobs.Register).
	builtin []config.Cron
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
	a := &app{cfg: cfg, src: g.configSource(), log: newLogger(cfg, g.stderr)}
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
	var err error
	if a.workspaces, err = wsconfig.New(a.store, a.src, a.log); err != nil {
		return err
	}
	if err := a.workspaces.Load(ctx); err != nil {
		return err
	}
	wsBudget := budget.WithWorkspaceBudget(func(ws string) (int64, bool) { return a.workspaces.Effective(ws).Budget() })
	if a.ledger, err = budget.New(a.store, a.cfg.Budget, budget.WithLogger(a.log.With("component", "budget")), wsBudget); err != nil {
		return err
	}
	a.llm = llm.New(llm.Options{Config: a.cfg.LLM, Ledger: a.ledger, Calls: a.store, Logger: a.log.With("component", "llm")})
	a.negledger = negledger.New(a.store, a.cfg.Ledger, a.log.With("component", "ledger")).
		WithModes(func(ws string) string { return a.workspaces.Effective(ws).LedgerMode() })
	a.harness = harnesses.New(a.store, a.cfg.Harness, a.log.With("component", "harness"))
	a.memories = memories.New(a.store, a.cfg.Memory, a.cfg.Digest).WithLessons(a.cfg.Lessons, a.cfg.Reflection).
		WithLedger(a.negledger).WithWorkspaces(a.workspaces)
	a.bench = benches.New(a.store, a.cfg.Bench, a.harness, a.memories, a.runner, a.log.With("component", "bench")).
		WithTokens(a.cfg.AdminToken != "", a.cfg.APIToken != "")
	// Every job kind, with its cron entries and ingest hooks. The ingest
	// service's hooks enqueue with the client built below, over a.reg.
	w := jobs.Register(a.reg, jobs.Deps{Store: a.store, Logger: a.log, LLM: a.llm, Ledger: a.ledger,
		Runner: a.runner, Config: a.cfg, Workspaces: a.workspaces})
	a.ingest, a.builtin = w.Ingest, w.Cron
	a.tasks = tasks.New(a.store, a.memories, a.ingest, a.cfg.Reflection)
	a.client, err = engine.NewClient(a.store.Driver(), a.reg, engine.ClientOptions{
		Config: a.cfg, Logger: a.log, Work: mode == work, Builtin: a.builtin,
	})
	if err != nil {
		return err
	}
	// task_end enqueues reflect_task with this client, in its transaction.
	a.tasks.UseClient(a.client)
	return nil
}

func (a *app) close() {
	if a.store != nil {
		_ = a.store.Close()
	}
}
