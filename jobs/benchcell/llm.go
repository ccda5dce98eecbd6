package benchcell

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	dshplugin "github.com/mullhq/mull/integrations/dsh"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/llm"
)

// Executor runs one cell's task on the side's snapshot and reports its
// evidence. An error fails the attempt: an *llm.Error is mapped as the
// LLM jobs map it (llm.JobResult), a *bench.ParseError or a *Failure
// names the cell's failure reason.
type Executor interface {
	Execute(ctx context.Context, in Input) (Outcome, error)
}

// Input is what an executor gets: the cell's run, case and snapshot, and
// the job making its calls: its id, kind, and the attempt running it
// (its number and start, River's attempted_at), which a DSH cell's
// capability is good for only while it runs.
type Input struct {
	benches.CellInput
	Side        bench.Side
	Iteration   int
	JobID       int64
	Kind        string
	Attempt     int
	AttemptedAt time.Time
}

// LLMExecutor is the seed's executor (bench.executor = llm): one JSON-mode
// call shown the case's statement and the side's snapshot, never the
// rubric; its answer parsed strictly as the evidence.
type LLMExecutor struct {
	LLM    *llm.Client
	Config config.Bench
}

// Execute makes the executor call and parses its evidence.
func (e *LLMExecutor) Execute(ctx context.Context, in Input) (Outcome, error) {
	call := llm.Call{Kind: in.Kind, JobID: in.JobID, Workspace: in.Run.Workspace}
	text, err := phase(ctx, e.LLM, e.Config, call, bench.ExecutorSystem, bench.ExecutorPrompt(in.Case, in.Snapshot))
	if err != nil {
		return Outcome{}, err
	}
	ev, err := bench.ParseEvidence(text)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Evidence: ev}, nil
}

// Judge is the judge phase, the same for every executor: the statement,
// the rubric and the evidence in one JSON-mode call, its verdict parsed
// strictly.
func Judge(ctx context.Context, c *llm.Client, cfg config.Bench, call llm.Call, cs bench.Case, ev bench.Evidence) (bench.Verdict, error) {
	text, err := phase(ctx, c, cfg, call, bench.JudgeSystem, bench.JudgePrompt(cs, ev))
	if err != nil {
		return bench.Verdict{}, err
	}
	return bench.ParseVerdict(text)
}

// phase is one call of a cell, bounded as the seed bounds each phase:
// bench.phase_timeout and bench.phase_max_tokens. The system prompt is
// first and byte-identical across cells, for DeepSeek's prefix cache.
func phase(ctx context.Context, c *llm.Client, cfg config.Bench, call llm.Call, system, user string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout.D())
	defer cancel()
	call.Messages = []llm.Message{llm.System(system), llm.User(user)}
	call.JSON, call.MaxTokens = true, cfg.PhaseMaxTokens
	res, err := c.Complete(ctx, call)
	return res.Content, err
}

// ExecutorFor is bench.executor's executor: the LLM call, or DSH headless
// reaching mull at its listen address, and its model through mull's LLM
// proxy with a capability caps mints.
func ExecutorFor(cfg config.Config, c *llm.Client, caps Minter) Executor {
	if cfg.Bench.Executor != config.BenchExecutorDSH {
		return &LLMExecutor{LLM: c, Config: cfg.Bench}
	}
	return &DSHExecutor{Command: cfg.Bench.DSHCommand, Timeout: cfg.Bench.DSHTimeout.D(),
		Model: cmp.Or(cfg.Bench.DSHModel, cfg.LLM.ForKind(Args{}.Kind()).Model), SelfURL: "http://" + dshplugin.LoopbackListen(cfg.Listen),
		Capabilities: caps, Refuse: missingTokens(cfg)}
}

// missingTokens is why this process must not run a DSH cell, or nil: the
// run-start check (benches' dsh-needs-tokens) holds only in the process
// that started the run, and a worker with another config works its cells
// too. A DSH cell is an agent with a shell on this host; without both
// tokens any loopback caller is mull's admin or may write memories.
func missingTokens(cfg config.Config) error {
	var missing []string
	if cfg.AdminToken == "" {
		missing = append(missing, "MULL_ADMIN_TOKEN (admin_token)")
	}
	if cfg.APIToken == "" {
		missing = append(missing, "MULL_API_TOKEN (api_token)")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("this mull process has no %s, so it runs no DSH cell (bench.executor = dsh): "+
		"a cell's agent would reach an unguarded mull on loopback; set the tokens for every mull process", strings.Join(missing, " or "))
}
