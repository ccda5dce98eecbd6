package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/dshimport"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/wsconfig"
)

func newServeCmd(g *globals) *cobra.Command {
	var workers, fakeLLM, watchDSH bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API and the job workers",
		Long: `Run mull: apply migrations, then serve the HTTP API (health, metrics, admin,
River UI) and work jobs, until SIGINT or SIGTERM.

On shutdown mull stops fetching jobs, lets running ones finish within
workers.shutdown_grace (default 30s), then cancels the rest (they go back to
the queue without using up an attempt), closes the database and exits 0. A second signal skips the grace.

mull listens on loopback by default. On any other address it needs api_token
(MULL_API_TOKEN), else it exits 2; http.insecure_listen = true starts anyway
with a warning. Requests must name a loopback Host or one in
http.allowed_hosts (else 421), cross-origin browser writes are refused, and
writes take only Content-Type: application/json. With admin_token set, a
browser logs in to River UI and the admin routes at /login.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode := work
			if !workers {
				mode = serveOnly
			}
			return runServer(cmd.Context(), g, mode, true, serveOpts{fakeLLM: fakeLLM, watchDSH: watchDSH})
		},
	}
	cmd.Flags().BoolVar(&workers, "workers", true, "also work jobs in this process (--workers=false serves HTTP only)")
	cmd.Flags().BoolVar(&watchDSH, "watch-dsh", false, "import DSH's session logs from dsh.home (MULL_DSH_HOME, $DSH_HOME or ~/.dsh) as they grow")
	cmd.Flags().BoolVar(&fakeLLM, "fake-llm", false, "answer LLM calls with the built-in fake DeepSeek on a loopback port: an offline demo, no API key")
	return cmd
}

func newWorkerCmd(g *globals) *cobra.Command {
	var fakeLLM bool
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Work jobs only, without the HTTP API",
		Long: `Work jobs without serving HTTP: run extra 'mull worker' processes against one
PostgreSQL to share the queue. River elects one leader among them for periodic
(cron) jobs. On SQLite every process must be on the same machine.

--fake-llm answers this worker's LLM calls with the built-in fake DeepSeek,
as serve's does: an offline demo, no API key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServer(cmd.Context(), g, work, false, serveOpts{fakeLLM: fakeLLM})
		},
	}
	cmd.Flags().BoolVar(&fakeLLM, "fake-llm", false, "answer LLM calls with the built-in fake DeepSeek on a loopback port: an offline demo, no API key")
	return cmd
}

// serveOpts are serve's own switches.
type serveOpts struct {
	fakeLLM, watchDSH bool
}

func runServer(ctx context.Context, g *globals, mode appMode, withHTTP bool, opts serveOpts) error {
	tuneGC(os.Getenv)
	if withHTTP {
		cfg, err := g.loadConfig()
		if err != nil {
			return err
		}
		if err := checkListen(cfg); err != nil {
			return err
		}
	}
	fakeLLM := opts.fakeLLM
	var edits []func(*config.Config)
	if fakeLLM {
		url, stop, err := startFakeLLM(ctx)
		if err != nil {
			return err
		}
		defer stop()
		edits = append(edits, func(c *config.Config) { c.LLM.BaseURL, c.LLM.APIKey = url, "sk-fake" })
	}
	a, err := g.open(ctx, mode, edits...)
	if err != nil {
		return err
	}
	defer a.close()
	if err := a.ledger.SyncConfig(ctx); err != nil {
		return fmt.Errorf("load budget limits from config: %w", err)
	}
	if fakeLLM {
		a.log.Warn("LLM calls go to the built-in fake DeepSeek", "base_url", a.cfg.LLM.BaseURL)
	}
	if mode == work {
		if err := holdLLMWithoutKey(ctx, a); err != nil {
			return err
		}
	}
	if a.store.Dialect == store.SQLite && !withHTTP {
		a.log.Warn("mull worker on SQLite: every process must share this machine's file; use PostgreSQL to spread work")
	}
	// Jobs keep running after the first signal; their context is this one,
	// cancelled only after the grace period.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()

	var srv *http.Server
	var apiSrv *api.Server
	if withHTTP {
		if apiSrv, err = api.New(workCtx, api.Deps{
			Store: a.store, Client: a.client, Registry: a.reg, Logger: a.log, AdminToken: a.cfg.AdminToken, Budget: a.ledger, Config: a.cfg, Ingest: a.ingest,
			Memories: a.memories, Tasks: a.tasks, Negledger: a.negledger, Harness: a.harness, Bench: a.bench, LLM: a.llm, Workspaces: a.workspaces,
		}); err != nil {
			return err
		}
		if !config.IsLoopbackHost(a.cfg.Listen) && a.cfg.APIToken == "" {
			a.log.Warn("INSECURE: listening beyond loopback with no api_token (http.insecure_listen = true): anyone who can reach "+a.cfg.Listen+" can write memories into agents' prompts", "listen", a.cfg.Listen)
		}
		ln, err := net.Listen("tcp", a.cfg.Listen)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", a.cfg.Listen, err)
		}
		srv = &http.Server{Handler: apiSrv, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.log.Error("http server stopped", "error", err)
			}
		}()
		if mode != work {
			apiSrv.WorkersDisabled()
		}
		a.log.Info("mull listening", "addr", "http://"+ln.Addr().String(), "database", a.store.Where,
			"workers", mode == work, "admin", adminMode(a.cfg.AdminToken))
	}
	if mode == work {
		if apiSrv != nil {
			events, cancel := a.client.Subscribe(api.MetricEvents...)
			defer cancel()
			go apiSrv.Metrics().Consume(events)
		}
		dog := &engine.Watchdog{
			Store: a.store, Client: a.client, Logger: a.log.With("component", "watchdog"),
			Interval: a.cfg.Workers.HeartbeatInterval.D(), DeadAfter: a.cfg.Workers.DeadAfter.D(),
			Queues: slices.Sorted(maps.Keys(a.cfg.Workers.Queues)),
		}
		// The first heartbeat goes in before the client fetches a job: a
		// process killed between its first fetch and its first beat would
		// leave a running job no watchdog knows the owner of, stuck until
		// River's own rescuer (workers.rescue_stuck_jobs_after).
		if err := dog.Beat(workCtx); err != nil {
			return fmt.Errorf("start workers: record this process's heartbeat: %w", err)
		}
		if err := a.client.Start(workCtx); err != nil {
			forgetCtx, cancel := context.WithTimeout(context.WithoutCancel(workCtx), 5*time.Second)
			_ = a.store.ForgetWorker(forgetCtx, a.client.ID())
			cancel()
			return fmt.Errorf("start workers: %w", err)
		}
		if apiSrv != nil {
			apiSrv.SetWorking(true)
		}
		dogCtx, stopDog := context.WithCancel(workCtx)
		dogDone := make(chan struct{})
		go func() {
			defer close(dogDone)
			dog.Run(dogCtx)
		}()
		defer func() { stopDog(); <-dogDone }()
		a.log.Info("workers started", "queues", a.cfg.Workers.Queues, "database", a.store.Where,
			"cron_entries", len(a.cfg.Cron), "rescue_stuck_jobs_after", engine.RescueAfter(a.cfg, a.reg).String())
	}

	// The config file's per-workspace settings (and the API's, written by
	// other processes) reload without a restart.
	wsTick := time.NewTicker(wsconfig.WatchInterval)
	defer wsTick.Stop()
	wsDone := make(chan struct{})
	go func() {
		defer close(wsDone)
		a.workspaces.Run(workCtx, wsTick.C, nil)
	}()
	defer func() { cancelWork(); <-wsDone }()

	if opts.watchDSH {
		ing, _ := importIngester(a)
		im := &dshimport.Importer{Home: a.cfg.DSH.Home, Store: a.store, Ingester: ing, Settle: a.cfg.Import.Settle.D(),
			Logger: a.log.With("component", "dsh-import")}
		watchDone := make(chan struct{})
		go func() {
			defer close(watchDone)
			_ = im.Watch(workCtx, a.cfg.DSH.WatchInterval.D())
		}()
		defer func() { cancelWork(); <-watchDone }()
		a.log.Info("watching DSH session logs", "home", a.cfg.DSH.Home, "every", a.cfg.DSH.WatchInterval.String())
	}

	<-ctx.Done()
	a.log.Info("shutting down", "grace", a.cfg.Workers.ShutdownGrace.String())
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)

	if srv != nil {
		httpCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(httpCtx)
		cancel()
	}
	if mode == work {
		if apiSrv != nil {
			apiSrv.SetWorking(false)
		}
		engine.Shutdown(a.client, a.cfg.Workers.ShutdownGrace.D(), again, a.log)
	}
	a.log.Info("stopped")
	return nil
}

// llmQueues are the queues the kinds that call DeepSeek (Spec.LLM) run on
// (llm, unless [jobs.*] moved them).
func llmQueues(a *app) []string {
	var qs []string
	for _, e := range a.reg.Specs() {
		if e.LLM && !slices.Contains(qs, e.Queue) {
			qs = append(qs, e.Queue)
		}
	}
	slices.Sort(qs)
	return qs
}

// holdLLMWithoutKey pauses the LLM queues before the workers start when
// there is no API key, so their jobs wait at the attempt they are at
// instead of spending them on 401s; with a key it resumes the queues a
// keyless start paused, and what waited runs.
func holdLLMWithoutKey(ctx context.Context, a *app) error {
	queues := llmQueues(a)
	if a.cfg.LLM.APIKey == "" {
		if err := llm.PauseWithoutKey(ctx, a.client, a.store.Driver(), queues, a.store.Now()); err != nil {
			return fmt.Errorf("pause the LLM queues (no API key): %w", err)
		}
		a.log.Warn("no DEEPSEEK_API_KEY (or llm.api_key) set: LLM queues paused, their jobs wait without using an attempt; set the key and restart (or run `mull queues resume llm` where a worker has it), or use --fake-llm for an offline demo",
			"queues", queues)
		return nil
	}
	resumed, err := llm.ResumeWithKey(ctx, a.client, queues)
	if err != nil {
		return fmt.Errorf("resume the LLM queues: %w", err)
	}
	if len(resumed) > 0 {
		a.log.Info("API key set: resumed the LLM queues paused for want of one", "queues", resumed)
	}
	return nil
}

// startFakeLLM serves the fake DeepSeek on a loopback port until stop.
func startFakeLLM(ctx context.Context) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("fake llm: %w", err)
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = fakeds.Serve(fctx, ln, fakeds.New(fakeds.Options{}))
	}()
	return "http://" + ln.Addr().String() + "/v1", func() { cancel(); <-done }, nil
}

// checkListen refuses a listen address beyond loopback without an API
// token: the API writes what reaches agents' system prompts.
// http.insecure_listen overrides it (serve then warns).
func checkListen(cfg config.Config) error {
	if config.IsLoopbackHost(cfg.Listen) || cfg.APIToken != "" || cfg.HTTP.InsecureListen {
		return nil
	}
	return &config.Error{Key: "api_token", Problem: fmt.Sprintf("listen %q is not a loopback address and no api_token (MULL_API_TOKEN) is set; set one, listen on 127.0.0.1, or set http.insecure_listen = true", cfg.Listen)}
}

func adminMode(token string) string {
	if token == "" {
		return "loopback only (no MULL_ADMIN_TOKEN set)"
	}
	return "bearer token"
}

// serveGCPercent is the GC target serve and worker run with unless GOGC is
// set. mull's live heap is a few MB, so Go's default (100) collects about
// every 0.4 s under 500 ledger checks a second, each collection taking a
// quarter of a 2-core machine from the agent's hot path: BenchmarkLedgerCheck
// measured SQLite's p99 at 8.7 ms with 100 and 3.3 ms with 400. 400 lets
// the heap grow to five times its live size (tens of MB) before collecting.
const serveGCPercent = 400

// tuneGC sets serveGCPercent, unless the environment chose (GOGC).
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
}
