package consolidate

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mullhq/mull/engine"
	rules "github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// DeriveArgs are the derive step's args.
type DeriveArgs struct {
	Workspace string `json:"workspace"`
}

// Kind is stable: it is stored with every job.
func (DeriveArgs) Kind() string { return "consolidate_derive" }

// DeriveSpec: one LLM call, after every chunk.
var DeriveSpec = engine.Spec{Queue: "llm", LLM: true, MaxAttempts: 5, Backoff: 5 * time.Minute, Timeout: 10 * time.Minute}

// Counts are what a finished run did: the derive step's output, also kept
// as the workspace's last counts.
type Counts struct {
	Workspace  string `json:"workspace"`
	Memories   int    `json:"memories"`
	Clusters   int    `json:"clusters"`
	Chunks     int    `json:"chunks"`
	Merged     int    `json:"merged"`
	Superseded int    `json:"superseded"`
	Rejected   int    `json:"rejected"`
	Stale      int    `json:"stale"`
	// Redacted and Quarantined are what the trust gate did to the run's
	// merges and derived lines (quarantined ones are kept in the
	// quarantine table, never served).
	Redacted    int `json:"redacted,omitempty"`
	Quarantined int `json:"quarantined,omitempty"`
	// DerivedRejected counts derived lines refused one by one (a NUL
	// byte, too long, quarantined…); the others were kept.
	DerivedRejected int `json:"derived_rejected,omitempty"`
	// Principles, Hypotheses and Prefetch count the derived memories
	// added; Kept the ones the model repeated; Replaced the old ones it
	// did not.
	Principles int    `json:"principles"`
	Hypotheses int    `json:"hypotheses"`
	Prefetch   int    `json:"prefetch"`
	Kept       int    `json:"kept"`
	Replaced   int    `json:"replaced"`
	Derived    bool   `json:"derived"`
	Tokens     Tokens `json:"tokens"`
}

// derive sums the chunks, asks for principles, hypotheses and prefetch
// when the library is big enough, and finishes the run: the derived
// memories, the watermark and the counts commit with the step.
func (d Deps) derive(ctx context.Context, step *workflows.Step[DeriveArgs]) (workflows.Result, error) {
	var in RunInput
	if err := step.Input(&in); err != nil {
		return workflows.Result{}, err
	}
	c := Counts{Workspace: in.Workspace, Memories: in.Memories, Clusters: in.Clusters, Chunks: in.Chunks}
	for _, dep := range step.Deps() {
		var o MergeOutput
		if err := step.Output(dep, &o); err != nil {
			return workflows.Result{}, err
		}
		c.Merged += o.Merged
		c.Superseded += o.Superseded
		c.Rejected += o.Rejected
		c.Redacted += o.Redacted
		c.Quarantined += o.Quarantined
		c.Stale += o.Stale
		c.Tokens.add(o.Tokens)
	}
	rows, err := d.Store.ListMemories(ctx, d.Store.DB, store.MemoryFilter{Workspaces: []string{in.Workspace}, Oldest: true})
	if err != nil {
		return workflows.Result{}, err
	}
	ms := memories.FromRows(rows)
	now := d.Store.Now()
	var plan rules.DeriveChanges
	if n := rules.CountBase(ms); n >= d.Settings.MinMemories {
		out, _, err := llm.CompleteJSON[rules.DeriveOutput](ctx, d.LLM, llm.Call{
			Kind: DeriveArgs{}.Kind(), JobID: step.Job.ID, Workspace: in.Workspace,
			Messages: []llm.Message{llm.System(rules.DerivePrompt), llm.User(rules.DeriveInput(ms, now, d.Settings.DeriveChars))},
		})
		if err != nil {
			return workflows.Result{}, llm.JobResult(ctx, d.Logger, step.Job, err)
		}
		c.Derived = true
		plan = rules.PlanDerive(out, ms, rules.Source{Workspace: in.Workspace, RunID: step.RunID, JobID: step.Job.ID}, now)
		for _, m := range plan.Add {
			switch m.Kind {
			case memory.Principle:
				c.Principles++
			case memory.Hypothesis:
				c.Hypotheses++
			case memory.Prefetch:
				c.Prefetch++
			}
		}
		c.Kept, c.Replaced = len(plan.Keep), len(plan.Invalidate)
		c.Redacted += plan.Redacted
		c.Quarantined += len(plan.Quarantined)
		c.DerivedRejected = len(plan.Rejected)
		for _, e := range plan.Rejected {
			d.Logger.Info("consolidate derived entry rejected", "run_id", step.RunID, "error", e)
		}
	}
	// Every call of this step's job, a failed derive attempt's too; a
	// library too small to derive from made none.
	own, err := d.jobTokens(ctx, step.Job.ID)
	if err != nil {
		return workflows.Result{}, err
	}
	c.Tokens.add(own)
	counts, _ := json.Marshal(c) // plain struct
	apply := func(ctx context.Context, tx *sql.Tx) error {
		// The library's lock first, then the state's row: the order no
		// other writer reverses.
		if err := d.Store.LockLibrary(ctx, tx, in.Workspace); err != nil {
			return err
		}
		if err := hold(ctx, d.Store, tx, "", step.Job.ID, plan.Quarantined, now); err != nil {
			return err
		}
		for _, m := range plan.Add {
			if _, err := d.Store.InsertMemory(ctx, tx, memories.ToRow(m)); err != nil {
				return err
			}
		}
		for _, id := range plan.Invalidate {
			if _, err := d.Store.InvalidateMemory(ctx, tx, id, now, rules.ReplaceReason, 0); err != nil {
				return err
			}
		}
		st, err := d.Store.LockConsolidateState(ctx, tx, in.Workspace)
		if err != nil {
			return err
		}
		st.Watermark = max(st.Watermark, in.Watermark)
		if st.RunID == step.RunID {
			st.RunID = ""
		}
		st.LastFinishedAt, st.LastCounts, st.LastRunID = now, string(counts), step.RunID
		st.LastNote = fmt.Sprintf("finished run %s: merged %d clusters (%d memories superseded), rejected %d; derived %d principles, %d hypotheses, %d prefetch",
			step.RunID, c.Merged, c.Superseded, c.Rejected, c.Principles, c.Hypotheses, c.Prefetch)
		return d.Store.PutConsolidateState(ctx, tx, st)
	}
	d.Logger.Info("consolidate run finished", "run_id", step.RunID, "workspace", in.Workspace, "merged", c.Merged,
		"superseded", c.Superseded, "rejected", c.Rejected, "redacted", c.Redacted, "quarantined", c.Quarantined, "principles", c.Principles, "hypotheses", c.Hypotheses,
		"prefetch", c.Prefetch, "calls", c.Tokens.Calls, "failed_calls", c.Tokens.Failed, "prompt_tokens", c.Tokens.Prompt, "completion_tokens", c.Tokens.Completion)
	return workflows.Result{Output: c, Apply: apply}, nil
}
