// Package llmprobe is the built-in LLM probe: one small JSON-mode call
// through the whole path (budget, DeepSeek, usage, cost, call record, error
// mapping), so an operator can check it end to end.
package llmprobe

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/llm"
)

// Args are an LLM probe's arguments.
type Args struct {
	// Prompt is echoed back by the model.
	Prompt string `json:"prompt"`
	// Workspace charges the call to this workspace's budget.
	Workspace string `json:"workspace,omitempty"`
}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "llm_probe" }

// Spec: the llm queue, a few attempts a short while apart, and a timeout
// above the client's call deadline.
var Spec = engine.Spec{Queue: "llm", LLM: true, MaxAttempts: 3, Backoff: 5 * time.Second, Timeout: 10 * time.Minute}

// Prompt is the fixed part of the probe's prompt, first and byte-identical
// across calls so DeepSeek's prefix cache serves it.
const Prompt = `mull-prompt: llm_probe v1
You are the health check of mull, a service that turns agent sessions into memory.
Reply with one json object and nothing else: no prose, no code fences.
Schema: {"ok": boolean, must be true; "echo": string, the user's message verbatim, at most 200 characters}.
Example: for the message "ping" reply {"ok": true, "echo": "ping"}.`

// Output is what the model must return.
type Output struct {
	OK   bool   `json:"ok"`
	Echo string `json:"echo"`
}

// Validate checks the model's output against the schema.
func (o Output) Validate() error {
	if !o.OK {
		return errors.New(`field "ok": must be true`)
	}
	if len([]rune(o.Echo)) > 200 {
		return errors.New(`field "echo": longer than 200 characters`)
	}
	return nil
}

// Worker works LLM probes.
type Worker struct {
	river.WorkerDefaults[Args]
	LLM    *llm.Client
	Logger *slog.Logger
}

// Work makes the call and maps its outcome to River.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	_, res, err := llm.CompleteJSON[Output](ctx, w.LLM, llm.Call{
		Kind: job.Kind, JobID: job.ID, Workspace: job.Args.Workspace,
		Messages: []llm.Message{llm.System(Prompt), llm.User(job.Args.Prompt)},
	})
	if err == nil {
		w.Logger.Info("llm probe answered", "job_id", job.ID, "model", res.Model, "prompt_tokens", res.Usage.PromptTokens,
			"cache_hit_tokens", res.Usage.CacheHitTokens, "completion_tokens", res.Usage.CompletionTokens,
			"cost_nano_usd", res.CostNanoUSD, "latency", res.Latency)
	}
	return llm.JobResult(ctx, w.Logger, job.JobRow, err)
}
