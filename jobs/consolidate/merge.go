package consolidate

import (
	"context"
	"database/sql"
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

// MergeArgs are one merge chunk step's args: the clusters, by memory id.
type MergeArgs struct {
	Workspace string          `json:"workspace"`
	Clusters  []rules.Cluster `json:"clusters"`
}

// Kind is stable: it is stored with every job.
func (MergeArgs) Kind() string { return "consolidate_merge" }

// MergeSpec: an LLM call per chunk, on the llm queue, retried like the retros.
var MergeSpec = engine.Spec{Queue: "llm", LLM: true, MaxAttempts: 5, Backoff: 5 * time.Minute, Timeout: 10 * time.Minute}

// MergeOutput is a merge chunk's stored output.
type MergeOutput struct {
	Clusters int `json:"clusters"`
	// Merged clusters became one memory each; Superseded counts their
	// sources, invalidated with a link to it.
	Merged     int `json:"merged"`
	Superseded int `json:"superseded"`
	// Rejected merges failed the fidelity check (or were not valid
	// memories); their sources stay.
	Rejected int `json:"rejected"`
	// Redacted counts credentials the trust gate redacted in the merges;
	// Quarantined the rejected merges it quarantined (kept in the
	// quarantine table, never served).
	Redacted    int `json:"redacted,omitempty"`
	Quarantined int `json:"quarantined,omitempty"`
	// Stale clusters had fewer than two live members by the time the step
	// ran (a retro superseded one meanwhile).
	Stale  int    `json:"stale"`
	Tokens Tokens `json:"tokens"`
}

// merge asks the model to merge one chunk's clusters and applies what
// passes the fidelity check with the step's completion.
func (d Deps) merge(ctx context.Context, step *workflows.Step[MergeArgs]) (workflows.Result, error) {
	a := step.Args
	var ids []int64
	for _, c := range a.Clusters {
		ids = append(ids, c.IDs...)
	}
	rows, err := d.Store.MemoriesByID(ctx, d.Store.DB, ids)
	if err != nil {
		return workflows.Result{}, err
	}
	now := d.Store.Now()
	byID := map[int64]memory.Memory{}
	for _, m := range memories.FromRows(rows) {
		if m.ValidAt(now) && !m.Quarantined && m.Workspace == a.Workspace {
			byID[m.ID] = m
		}
	}
	var live []rules.Cluster
	out := MergeOutput{Clusters: len(a.Clusters)}
	for _, c := range a.Clusters {
		var keep []int64
		for _, id := range c.IDs {
			if _, ok := byID[id]; ok {
				keep = append(keep, id)
			}
		}
		if len(keep) < 2 {
			out.Stale++
			continue
		}
		live = append(live, rules.Cluster{Kind: c.Kind, IDs: keep})
	}
	if len(live) == 0 {
		// An earlier attempt may have called the model before its
		// clusters went stale.
		out.Tokens, err = d.jobTokens(ctx, step.Job.ID)
		return workflows.Result{Output: out}, err
	}
	reply, _, err := llm.CompleteJSON[rules.MergeReply](ctx, d.LLM, llm.Call{
		Kind: MergeArgs{}.Kind(), JobID: step.Job.ID, Workspace: a.Workspace,
		Messages: []llm.Message{llm.System(rules.MergePrompt), llm.User(rules.MergeInput(live, byID))},
	})
	if err == nil {
		if verr := rules.MergeOutput(reply).Validate(len(live)); verr != nil {
			err = &llm.Error{Class: llm.Invalid, Reason: "schema", Err: fmt.Errorf("output fails validation: %w", verr)}
		}
	}
	if err != nil {
		return workflows.Result{}, llm.JobResult(ctx, d.Logger, step.Job, err)
	}
	if out.Tokens, err = d.jobTokens(ctx, step.Job.ID); err != nil {
		return workflows.Result{}, err
	}
	plan := rules.PlanMerges(rules.MergeOutput(reply), live, byID, rules.Source{Workspace: a.Workspace, RunID: step.RunID, JobID: step.Job.ID}, now)
	out.Rejected, out.Quarantined = len(plan.Rejected), len(plan.Quarantined)
	for _, m := range plan.Merged {
		out.Redacted += m.Redacted
	}
	for _, r := range plan.Rejected {
		d.Logger.Info("consolidate merge rejected", "run_id", step.RunID, "step", step.Name, "ids", r.Cluster.IDs,
			"missing", r.Missing, "error", r.Err)
	}
	out.Merged = len(plan.Merged)
	for _, m := range plan.Merged {
		out.Superseded += len(m.Supersedes)
	}
	apply := func(ctx context.Context, tx *sql.Tx) error {
		// Under the library's lock, as the retros and remember write, so
		// a digest publication waits for the merge to commit.
		if err := d.Store.LockLibrary(ctx, tx, a.Workspace); err != nil {
			return err
		}
		if err := hold(ctx, d.Store, tx, "merge", step.Job.ID, plan.Quarantined, now); err != nil {
			return err
		}
		for _, m := range plan.Merged {
			ok, err := sourcesLive(ctx, d.Store, tx, m.Supersedes)
			if err != nil {
				return err
			}
			if !ok {
				// A retro invalidated a source since the step read it: roll
				// back, and the retry reads the library again.
				return fmt.Errorf("a source of merged memories %v changed while the merge ran; retrying", m.Supersedes)
			}
			id, err := d.Store.InsertMemory(ctx, tx, memories.ToRow(m.New))
			if err != nil {
				return err
			}
			for _, old := range m.Supersedes {
				if _, err := d.Store.InvalidateMemory(ctx, tx, old, now, rules.InvalidReason, id); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return workflows.Result{Output: out, Apply: apply}, nil
}

// hold keeps what the trust gate quarantined in a consolidation's answer
// in the quarantine table, never served; kind is the record's kind, or ""
// for each memory's own (principle, hypothesis, prefetch).
func hold(ctx context.Context, s *store.Store, tx *sql.Tx, kind string, jobID int64, ms []memory.Memory, now time.Time) error {
	for _, m := range ms {
		k := kind
		if k == "" {
			k = string(m.Kind)
		}
		if err := s.InsertQuarantined(ctx, tx, store.Quarantined{Workspace: m.Workspace, Kind: k, Text: m.Text,
			Reason: m.QuarantineReason, JobID: jobID, RecordedAt: now}); err != nil {
			return err
		}
	}
	return nil
}

// sourcesLive reports whether every memory is still valid inside tx: a
// merge applies only over the rows it read.
func sourcesLive(ctx context.Context, s *store.Store, tx *sql.Tx, ids []int64) (bool, error) {
	rows, err := s.MemoriesByID(ctx, tx, ids)
	if err != nil {
		return false, err
	}
	if len(rows) != len(ids) {
		return false, nil
	}
	for _, r := range rows {
		if !r.InvalidAt.IsZero() || r.Quarantined {
			return false, nil
		}
	}
	return true, nil
}
