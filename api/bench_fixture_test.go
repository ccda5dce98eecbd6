package api_test

import (
	"context"
	"errors"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/jobs/benchcell"
	"github.com/mullhq/mull/jobs/benchdecide"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// errStub: the API tests' clients work no job, so a bench step never runs.
var errStub = errors.New("bench step stub: the API tests work no job")

// registerBench makes bench_cell and bench_decide step kinds the runner
// and the client know, so a run's workflow starts (its steps stay queued:
// the API's tests read what the service recorded, not the cells' work),
// and returns the service over that runner.
func registerBench(reg *engine.Registry, s *store.Store, cfg config.Config, h *harnesses.Service, mem *memories.Service) *benches.Service {
	r := workflows.New(s, enginetest.Logger())
	workflows.AddStep(reg, r, engine.Spec{}, func(context.Context, *workflows.Step[benchcell.Args]) (workflows.Result, error) {
		return workflows.Result{}, errStub
	})
	workflows.AddStep(reg, r, engine.Spec{}, func(context.Context, *workflows.Step[benchdecide.Args]) (workflows.Result, error) {
		return workflows.Result{}, errStub
	})
	return benches.New(s, cfg.Bench, h, mem, r, enginetest.Logger()).WithTokens(cfg.AdminToken != "", cfg.APIToken != "")
}
