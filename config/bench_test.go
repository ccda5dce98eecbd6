package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
)

// TestBenchDefaultsAreTheSeeds pins [bench]'s defaults to seed 004's
// benchmark config (jasen215/dsh-continual-harness src/index.ts and
// evaluate.ts: defaultRuns 1, maxRuns 3, passThreshold 60 (report only),
// regressionTolerance 0, maxFailedCells 0; 60 s and 8000 tokens per
// phase), written out here rather than read from the code, so a changed
// default fails.
func TestBenchDefaultsAreTheSeeds(t *testing.T) {
	b := config.Default().Bench
	if b.Executor != "llm" || b.DefaultRuns != 1 || b.MaxRuns != 3 || b.Pass() != 60 || b.RegressionTolerance != 0 ||
		b.MaxFailedCells != 0 || b.PhaseTimeout.D() != 60*time.Second || b.PhaseMaxTokens != 8000 ||
		b.DSHCommand != "" || b.DSHTimeout.D() != 5*time.Minute || b.DSHModel != "" {
		t.Fatalf("defaults: %+v (pass %v)", b, b.Pass())
	}
	if z := (config.Bench{}); z.Pass() != 60 {
		t.Fatalf("a zero Bench's pass threshold: %v", z.Pass())
	}
	c, err := config.Load(config.Source{Environ: []string{"MULL_BENCH_EXECUTOR=dsh", "MULL_BENCH_DSH_COMMAND=node dsh.js",
		"MULL_BENCH_DEFAULT_RUNS=2", "MULL_BENCH_MAX_RUNS=5", "MULL_BENCH_PASS_THRESHOLD=0", "MULL_BENCH_REGRESSION_TOLERANCE=0.5",
		"MULL_BENCH_MAX_FAILED_CELLS=1", "MULL_BENCH_PHASE_TIMEOUT=90s", "MULL_BENCH_PHASE_MAX_TOKENS=4000"}})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Bench
	if s.Executor != "dsh" || s.DSHCommand != "node dsh.js" || s.DefaultRuns != 2 || s.MaxRuns != 5 || s.Pass() != 0 ||
		s.RegressionTolerance != 0.5 || s.MaxFailedCells != 1 || s.PhaseTimeout.D() != 90*time.Second || s.PhaseMaxTokens != 4000 {
		t.Fatalf("set: %+v (pass %v)", s, s.Pass())
	}
}

func TestBenchRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		env []string
		key string
	}{
		{[]string{"MULL_BENCH_EXECUTOR=shell"}, "bench.executor"},
		{[]string{"MULL_BENCH_EXECUTOR=dsh"}, "bench.dsh_command"},
		{[]string{"MULL_BENCH_MAX_RUNS=101"}, "bench.max_runs"},
		{[]string{"MULL_BENCH_DEFAULT_RUNS=4"}, "bench.default_runs"},
		{[]string{"MULL_BENCH_PASS_THRESHOLD=100.5"}, "bench.pass_threshold"},
		{[]string{"MULL_BENCH_REGRESSION_TOLERANCE=-1"}, "bench.regression_tolerance"},
		{[]string{"MULL_BENCH_MAX_FAILED_CELLS=-1"}, "bench.max_failed_cells"},
		{[]string{"MULL_BENCH_PHASE_TIMEOUT=500ms"}, "bench.phase_timeout"},
		{[]string{"MULL_BENCH_PHASE_MAX_TOKENS=100"}, "bench.phase_max_tokens"},
		{[]string{"MULL_BENCH_DSH_TIMEOUT=500ms"}, "bench.dsh_timeout"},
	} {
		_, err := config.Load(config.Source{Environ: tc.env})
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%v: %v, want an error naming %s", tc.env, err, tc.key)
		}
	}
}
