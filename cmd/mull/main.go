// Command mull is the durable learning worker beside DeepSeek Harness: it
// turns what happens in DSH sessions into memory by running LLM jobs on River.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lmittmann/tint"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/mullhq/mull/config"
)

// exitError carries a specific exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is a bad command line: exit status 2.
func usageErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one mull command line and returns its exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var cfgErrs config.Errors
	var cfgErr *config.Error
	var exit *exitError
	switch {
	case errors.As(err, &cfgErrs):
		for _, e := range cfgErrs {
			fmt.Fprintf(stderr, "mull: config: %s\n", e)
		}
		return 2
	case errors.As(err, &cfgErr):
		fmt.Fprintf(stderr, "mull: config: %s\n", cfgErr)
		return 2
	case errors.As(err, &exit):
		fmt.Fprintf(stderr, "mull: %v\n", exit.err)
		return exit.code
	case isFlagError(err):
		fmt.Fprintf(stderr, "mull: %v\nRun 'mull --help' for usage.\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "mull: %v\n", err)
		return 1
	}
}

func isFlagError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "unknown flag") || strings.Contains(s, "unknown command") ||
		strings.Contains(s, "flag needs an argument") || strings.Contains(s, "invalid argument") ||
		strings.Contains(s, "unknown shorthand") || strings.Contains(s, "accepts ") ||
		strings.Contains(s, "requires at least")
}

// globals are the flags every command shares, and the output streams.
type globals struct {
	configFile  string
	dataDir     string
	databaseURL string
	listen      string
	logLevel    string
	logFormat   string

	// envWarned: the unknown MULL_* variables were reported (once a run).
	envWarned bool

	stdout, stderr io.Writer
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "mull",
		Short: "The durable learning worker beside DeepSeek Harness",
		Long: `mull turns what happens in DeepSeek Harness (DSH) sessions into memory by
running LLM jobs (retrospectives, consolidation, reviews) as retried River jobs
with dead letters and daily token budgets, and hands that memory back to DSH.

It runs on an embedded SQLite database by default (under --data-dir) and on
PostgreSQL when MULL_DATABASE_URL (or --database-url) is postgres://….

Configuration comes from defaults, then the TOML file given by --config (or
MULL_CONFIG), then MULL_* environment variables, then flags. 'mull config
print' shows the result.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: checkInput,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.configFile, "config", os.Getenv("MULL_CONFIG"), "TOML config file (env MULL_CONFIG)")
	pf.StringVar(&g.dataDir, "data-dir", "", "directory for the embedded SQLite database (default ./.mull; env MULL_DATA_DIR)")
	pf.StringVar(&g.databaseURL, "database-url", "", "postgres://… or sqlite:PATH (default SQLite in the data dir; env MULL_DATABASE_URL)")
	pf.StringVar(&g.listen, "listen", "", "HTTP address (default 127.0.0.1:7788; env MULL_LISTEN)")
	pf.StringVar(&g.logLevel, "log-level", "", "debug, info, warn or error (default info; env MULL_LOG_LEVEL)")
	pf.StringVar(&g.logFormat, "log-format", "", "auto, text or json (default auto: text on a terminal, else JSON; env MULL_LOG_FORMAT)")
	root.AddCommand(
		newServeCmd(g), newWorkerCmd(g), newMigrateCmd(g), newVersionCmd(g), newConfigCmd(g),
		newProbeCmd(g), newDLQCmd(g), newJobsCmd(g), newWorkflowsCmd(g), newQueuesCmd(g), newWorkersCmd(g), newLLMCmd(g), newSessionsCmd(g), newImportCmd(g), newMemoryCmd(g), newTasksCmd(g), newDSHCmd(g),
		newFakeDeepSeekCmd(g), newBudgetCmd(g), newRetroCmd(g), newProposalsCmd(g), newPlaybooksCmd(g), newConsolidateCmd(g), newLessonsCmd(g), newLedgerCmd(g), newHarnessCmd(g),
		newBenchCmd(g), newReportCmd(g), newWorkspacesCmd(g),
	)
	return root
}

// loadConfig builds the effective configuration.
func (g *globals) loadConfig() (config.Config, error) {
	src := g.configSource()
	cfg, err := config.Load(src)
	g.warnEnv(cfg, err, src.Environ)
	return cfg, err
}

// configSource is where the configuration comes from: the file, the
// environment and the global flags.
func (g *globals) configSource() config.Source {
	flags := map[string]string{}
	for key, v := range map[string]string{
		"data_dir": g.dataDir, "database_url": g.databaseURL, "listen": g.listen,
		"log.level": g.logLevel, "log.format": g.logFormat,
	} {
		if v != "" {
			flags[key] = v
		}
	}
	return config.Source{File: g.configFile, Environ: os.Environ(), Flags: flags}
}

// warnEnv reports each MULL_* variable mull does not read, once a run, in
// the log's format (or as plain lines when the config did not load):
// mistyped, it would be ignored without a word.
func (g *globals) warnEnv(cfg config.Config, loadErr error, environ []string) {
	if g.envWarned {
		return
	}
	g.envWarned = true
	warnings := config.UnknownEnv(environ)
	if len(warnings) == 0 {
		return
	}
	if loadErr != nil {
		for _, w := range warnings {
			fmt.Fprintf(g.stderr, "mull: warning: %s\n", w)
		}
		return
	}
	log := newLogger(cfg, g.stderr)
	for _, w := range warnings {
		name, _, _ := strings.Cut(w, " ")
		log.Warn(w, "variable", name)
	}
}

// newLogger builds the process logger: tint on a terminal, JSON otherwise.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	format := strings.ToLower(cfg.Log.Format)
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			format = "tint"
		}
	}
	switch format {
	case "tint":
		return slog.New(tint.NewHandler(w, &tint.Options{Level: level}))
	case "text":
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	default:
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
	}
}
