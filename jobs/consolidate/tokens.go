package consolidate

import (
	"context"

	"github.com/mullhq/mull/store"
)

// Tokens are one step's LLM use: every call its job made, in every
// attempt, failed ones included (they are paid for too).
type Tokens struct {
	Calls int `json:"calls"`
	// Failed counts the calls that ended in an error or were lost.
	Failed     int   `json:"failed,omitempty"`
	Prompt     int64 `json:"prompt_tokens"`
	CacheHit   int64 `json:"cache_hit_tokens"`
	Completion int64 `json:"completion_tokens"`
	CostNano   int64 `json:"cost_nano_usd"`
}

func (t *Tokens) add(o Tokens) {
	t.Calls += o.Calls
	t.Failed += o.Failed
	t.Prompt += o.Prompt
	t.CacheHit += o.CacheHit
	t.Completion += o.Completion
	t.CostNano += o.CostNano
}

// jobTokens sums the LLM call records of a step's job. The job keeps its id
// across River's attempts, so a call that failed (and made the step retry)
// counts, as `mull retro run` counts a retro's; this attempt's call is
// recorded before Complete returns.
func (d Deps) jobTokens(ctx context.Context, jobID int64) (Tokens, error) {
	rows, err := d.Store.SumLLMCalls(ctx, "job", store.LLMCallFilter{JobID: jobID})
	if err != nil {
		return Tokens{}, err
	}
	var t Tokens
	for _, r := range rows {
		t.add(Tokens{Calls: int(r.Calls), Failed: int(r.Failed), Prompt: r.PromptTokens, CacheHit: r.CacheHitTokens,
			Completion: r.CompletionTokens, CostNano: r.CostNanoUSD})
	}
	return t, nil
}
