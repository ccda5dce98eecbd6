package config

import (
	"cmp"
	"slices"
	"time"
)

// The bench executors (bench.executor): what runs a benchmark cell's task.
const (
	// BenchExecutorLLM: one executor call to DeepSeek whose JSON is the
	// cell's evidence (the seed's executor), then the judge call.
	BenchExecutorLLM = "llm"
	// BenchExecutorDSH: a real DSH headless subprocess per cell, with its
	// own DSH_HOME and workspace and the side's snapshot installed through
	// the bridge; its session log is the evidence the judge reads.
	BenchExecutorDSH = "dsh"
)

// BenchExecutors lists the executors.
var BenchExecutors = []string{BenchExecutorLLM, BenchExecutorDSH}

// Bench configures A/B benchmark runs (seed 004's benchmark): frozen cases
// run on a reference and a candidate snapshot, each cell a retried job, the
// decision made by code.
type Bench struct {
	// Executor is llm or dsh. Defaults to "llm". Env: MULL_BENCH_EXECUTOR.
	Executor string `toml:"executor"`
	// DefaultRuns is how many iterations of each case × side a run makes
	// when none is asked for (the seed's defaultRuns). Defaults to 1.
	// Env: MULL_BENCH_DEFAULT_RUNS.
	DefaultRuns int `toml:"default_runs"`
	// MaxRuns caps the iterations a run may ask for (the seed's maxRuns).
	// Defaults to 3. Env: MULL_BENCH_MAX_RUNS.
	MaxRuns int `toml:"max_runs"`
	// PassThreshold is reported with the decision and never gates it (the
	// seed's passThreshold). Defaults to 60. Env: MULL_BENCH_PASS_THRESHOLD.
	PassThreshold *float64 `toml:"pass_threshold" env:"number"`
	// RegressionTolerance is how far the candidate's mean (overall or of a
	// case) may fall below the reference's before the run is rejected.
	// Defaults to 0. Env: MULL_BENCH_REGRESSION_TOLERANCE.
	RegressionTolerance float64 `toml:"regression_tolerance"`
	// MaxFailedCells is how many failed candidate cells a run may have and
	// still be accepted. Defaults to 0. Env: MULL_BENCH_MAX_FAILED_CELLS.
	MaxFailedCells int `toml:"max_failed_cells"`
	// PhaseTimeout bounds each phase of a cell (the executor, the judge).
	// Defaults to 60s (the seed's). Env: MULL_BENCH_PHASE_TIMEOUT.
	PhaseTimeout Duration `toml:"phase_timeout"`
	// PhaseMaxTokens caps each phase's answer. Defaults to 8000 (the
	// seed's). Env: MULL_BENCH_PHASE_MAX_TOKENS.
	PhaseMaxTokens int `toml:"phase_max_tokens"`
	// DSHCommand runs DSH headless for bench.executor = dsh, split on
	// spaces: for example "node /opt/dsh/node_modules/@deepseek-ai/dsh/lib/bin.js".
	// Required with that executor. Env: MULL_BENCH_DSH_COMMAND.
	DSHCommand string `toml:"dsh_command"`
	// DSHTimeout bounds one DSH cell's run. Defaults to 5m.
	// Env: MULL_BENCH_DSH_TIMEOUT.
	DSHTimeout Duration `toml:"dsh_timeout"`
	// DSHModel is the model name the DSH cell's agent asks for. Defaults
	// to llm.model's. Env: MULL_BENCH_DSH_MODEL.
	DSHModel string `toml:"dsh_model"`
}

// Pass is bench.pass_threshold (default 60).
func (b Bench) Pass() float64 {
	if b.PassThreshold == nil {
		return 60
	}
	return *b.PassThreshold
}

func (b Bench) withDefaults() Bench {
	b.Executor = cmp.Or(b.Executor, BenchExecutorLLM)
	b.DefaultRuns = cmp.Or(b.DefaultRuns, 1)
	b.MaxRuns = cmp.Or(b.MaxRuns, 3)
	if b.PassThreshold == nil {
		v := 60.0
		b.PassThreshold = &v
	}
	b.PhaseTimeout = cmp.Or(b.PhaseTimeout, Duration(60*time.Second))
	b.PhaseMaxTokens = cmp.Or(b.PhaseMaxTokens, 8000)
	b.DSHTimeout = cmp.Or(b.DSHTimeout, Duration(5*time.Minute))
	return b
}

func (b Bench) validate() error {
	if !slices.Contains(BenchExecutors, b.Executor) {
		return bad("bench.executor", "must be one of llm, dsh, got %q", b.Executor)
	}
	if b.MaxRuns < 1 || b.MaxRuns > 100 {
		return bad("bench.max_runs", "must be between 1 and 100, got %d", b.MaxRuns)
	}
	if b.DefaultRuns < 1 || b.DefaultRuns > b.MaxRuns {
		return bad("bench.default_runs", "must be between 1 and bench.max_runs (%d), got %d", b.MaxRuns, b.DefaultRuns)
	}
	if p := b.Pass(); p < 0 || p > 100 {
		return bad("bench.pass_threshold", "must be between 0 and 100, got %g", p)
	}
	if b.RegressionTolerance < 0 {
		return bad("bench.regression_tolerance", "must be 0 or more, got %g", b.RegressionTolerance)
	}
	if b.MaxFailedCells < 0 {
		return bad("bench.max_failed_cells", "must be 0 or more, got %d", b.MaxFailedCells)
	}
	if b.PhaseTimeout.D() < time.Second {
		return bad("bench.phase_timeout", "must be at least 1s, got %s", b.PhaseTimeout.D())
	}
	if b.PhaseMaxTokens < 256 {
		return bad("bench.phase_max_tokens", "must be at least 256, got %d", b.PhaseMaxTokens)
	}
	if b.DSHTimeout.D() < time.Second {
		return bad("bench.dsh_timeout", "must be at least 1s, got %s", b.DSHTimeout.D())
	}
	if b.Executor == BenchExecutorDSH && b.DSHCommand == "" {
		return bad("bench.dsh_command", "is required with bench.executor = \"dsh\" (the command that runs DSH headless)")
	}
	return nil
}
