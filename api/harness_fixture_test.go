package api_test

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/jobs/refinereview"
	"github.com/mullhq/mull/store"
)

// refineStub makes refine_review a kind the client knows (the rig's client
// works no job, so it never runs): the API's tests read what was enqueued
// and what the service recorded, not the job's work.
type refineStub struct {
	river.WorkerDefaults[refinereview.Args]
}

func (refineStub) Work(context.Context, *river.Job[refinereview.Args]) error { return nil }

func registerRefine(reg *engine.Registry, _ *store.Store, _ config.Config) {
	engine.Add(reg, refinereview.Spec, river.Worker[refinereview.Args](&refineStub{}))
	engine.Add(reg, engine.Spec{}, river.Worker[otherArgs](&otherStub{}))
}

// otherArgs is a job of another kind than refine_review.
type otherArgs struct{}

func (otherArgs) Kind() string { return "harness_other" }

type otherStub struct {
	river.WorkerDefaults[otherArgs]
}

func (otherStub) Work(context.Context, *river.Job[otherArgs]) error { return nil }
