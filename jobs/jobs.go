// Package jobs registers every job kind mull works. Each kind lives in its
// own package under jobs/, holding its Args, Spec and Worker.
package jobs

import (
	"log/slog"
	"time"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/budgetsweep"
	"github.com/mullhq/mull/jobs/llmprobe"
	"github.com/mullhq/mull/jobs/probe"
	"github.com/mullhq/mull/jobs/retroerror"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/jobs/sessionidle"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
)

// Deps are what job workers are built from.
type Deps struct {
	Store  *store.Store
	Logger *slog.Logger
	LLM    *llm.Client
	Ledger *budget.Ledger
	// Ingest stores events and ends idle sessions.
	Ingest *ingest.Service
	// IdleTimeout is ingest.idle_timeout: how long a session may stay
	// silent before session_idle ends it.
	IdleTimeout time.Duration
	// MemoryScope is config memory.scope: under "both" the retro jobs
	// promote each workspace's best memories to the global library.
	MemoryScope string
	// RetroCaps bound the retros' excerpts (config retro.excerpt).
	RetroCaps retro.Caps
}

// Register adds every job kind's worker to the registry.
func Register(reg *engine.Registry, d Deps) {
	engine.Add(reg, probe.Spec, &probe.Worker{})
	engine.Add(reg, llmprobe.Spec, &llmprobe.Worker{LLM: d.LLM, Logger: d.Logger})
	engine.Add(reg, budgetsweep.Spec, &budgetsweep.Worker{Ledger: d.Ledger, Store: d.Store, Hold: d.LLM.Hold(),
		KeepPrompts: d.LLM.KeepPrompts(), Logger: d.Logger})
	scope := memory.Scope(d.MemoryScope)
	engine.Add(reg, retrosession.Spec, &retrosession.Worker{Store: d.Store, LLM: d.LLM, Logger: d.Logger, Scope: scope, Caps: d.RetroCaps})
	engine.Add(reg, retroerror.Spec, &retroerror.Worker{Store: d.Store, LLM: d.LLM, Logger: d.Logger, Scope: scope, Caps: d.RetroCaps})
	if d.Ingest == nil || d.IdleTimeout <= 0 {
		panic("jobs: Deps.Ingest and Deps.IdleTimeout are required (session_idle)")
	}
	engine.Add(reg, sessionidle.Spec, &sessionidle.Worker{Ingest: d.Ingest, Idle: d.IdleTimeout, Logger: d.Logger})
}
