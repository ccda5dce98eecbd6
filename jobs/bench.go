package jobs

import (
	"github.com/mullhq/mull/benchcap"
	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/jobs/benchcell"
	"github.com/mullhq/mull/jobs/benchdecide"
)

// registerBench adds a benchmark run's two step kinds, bench_cell and
// bench_decide, over one benches.Service: the cells read what to run from
// it and record into it, the decision is its. The cells' executor is
// bench.executor's.
func registerBench(reg *engine.Registry, d Deps) {
	cfg, log := d.Config, d.Logger.With("component", "bench")
	svc := benches.New(d.Store, cfg.Bench, harnesses.New(d.Store, cfg.Harness, log), d.memories(), d.Runner, log).
		WithTokens(cfg.AdminToken != "", cfg.APIToken != "")
	benchcell.Register(reg, d.Runner, &benchcell.Worker{Service: svc, LLM: d.LLM, Executor: benchcell.ExecutorFor(cfg, d.LLM, benchcap.NewKeyring(d.Store)),
		Config: cfg.Bench, Logger: log.With("kind", "bench_cell")})
	benchdecide.Register(reg, d.Runner, &benchdecide.Worker{Service: svc, Logger: log.With("kind", "bench_decide")})
}
