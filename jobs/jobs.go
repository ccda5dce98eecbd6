// Package jobs registers every job kind mull works. Each kind lives in its
// own package under jobs/, holding its Args, Spec and Worker.
package jobs

import (
	"log/slog"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/jobs/probe"
	"github.com/mullhq/mull/store"
)

// Deps are what job workers are built from.
type Deps struct {
	Store  *store.Store
	Logger *slog.Logger
}

// Register adds every job kind's worker to the registry.
func Register(reg *engine.Registry, d Deps) {
	engine.Add(reg, probe.Spec, &probe.Worker{})
}
