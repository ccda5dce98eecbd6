package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/riverqueue/river/rivertype"
	"github.com/spf13/cobra"

	"github.com/mullhq/mull/jobs/consolidate"
	rules "github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

func newConsolidateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "consolidate",
		Short: "Run and inspect sleep-time consolidation",
		Long: `Consolidation keeps a workspace's memory small and true. It finds
near-duplicate memories among those added since its last run (cheaply, by
MinHash, without asking the model about every pair), asks the model to merge
each cluster, and keeps a merge only if every source's key content survives
(numbers, paths, flags, identifiers): the sources are invalidated with a link
to the merged memory, nothing is rewritten in place. Then it derives 3-6
principles, 1-3 hypotheses and 3-5 prefetch lines for the digest.

It runs on its own: on the schedule in consolidate.schedule (default 18:30
UTC, DeepSeek's off-peak price) for every workspace with new memories, and
once consolidate.after_sessions sessions (default 5) of a workspace have
ended since its last run; at most one run per workspace at a time, and not
again within consolidate.cooldown (default 6h) unless asked for here.`,
	}
	cmd.AddCommand(newConsolidateRunCmd(g), newConsolidateStatusCmd(g))
	return cmd
}

func newConsolidateRunCmd(g *globals) *cobra.Command {
	var asJSON, noWait, dryRun bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "run WORKSPACE",
		Short: "Consolidate a workspace now and follow the run",
		Long: `Enqueue a consolidation of WORKSPACE (a path as 'mull memory list' shows
it; "" is the global library) and follow it: the planner, then each merge
chunk as it finishes, then the derive step. It prints what the run did
(clusters merged, memories superseded, merges rejected by the fidelity
check, principles, hypotheses and prefetch derived) and what it cost (LLM
calls, failed attempts included, tokens in and out, USD). A run asked for here ignores the cooldown,
but not a run already in flight.

A large workspace is split into chunks of consolidate.chunk_chars; each is a
step of a workflow, so a crash resumes from the chunks left.

--dry-run plans without a worker, a job or the model: it prints the
candidate clusters and chunks the run would send, and an estimate of the
tokens.

A worker ('mull serve' or 'mull worker') must be running on the same
database for a real run. Exit status: 0 when the run finished (or there was
nothing to do); 1 when it failed or --timeout passed (it goes on); 2 for a
workspace without memories or a bad flag.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usageErr("--timeout %s: want a positive duration", timeout)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			ws := args[0]
			if ms, err := a.store.ListMemories(cmd.Context(), a.store.DB, store.MemoryFilter{Workspaces: []string{ws}, All: true, Limit: 1}); err != nil {
				return err
			} else if len(ms) == 0 {
				return usageErr("workspace %q has no memories ('mull memory list' shows the workspaces that have)", ws)
			}
			if dryRun {
				return consolidateDryRun(cmd.Context(), g, a, ws, asJSON)
			}
			return runConsolidate(cmd.Context(), g, a, ws, asJSON, noWait, timeout)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&dryRun, "dry-run", false, "print the plan (clusters, chunks, estimated tokens) without running anything")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON (progress goes to stderr)")
	f.BoolVar(&noWait, "no-wait", false, "only enqueue the planner and print its job id")
	f.DurationVar(&timeout, "timeout", 30*time.Minute, "how long to follow the run before giving up (it goes on)")
	return cmd
}

// consolidateResult is what `consolidate run` reports, and its --json.
type consolidateResult struct {
	JobID  int64                `json:"job_id"`
	RunID  string               `json:"run_id,omitempty"`
	Note   string               `json:"note"`
	Status string               `json:"status"`
	Counts *consolidate.Counts  `json:"counts,omitempty"`
	Steps  []consolidateStepOut `json:"steps,omitempty"`
}

type consolidateStepOut struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

func runConsolidate(ctx context.Context, g *globals, a *app, ws string, asJSON, noWait bool, timeout time.Duration) error {
	res, err := a.client.Insert(ctx, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual,
		Requested: time.Now().UTC().Format(time.RFC3339Nano)}, nil)
	if err != nil {
		return fmt.Errorf("enqueue consolidate of %q: %w", ws, err)
	}
	progress := g.stdout
	if asJSON {
		progress = g.stderr
	}
	fmt.Fprintf(progress, "enqueued consolidate job %d for %q\n", res.Job.ID, ws)
	if noWait {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	job, err := followJob(ctx, a, res.Job.ID, progress, followOpts{})
	if err != nil {
		return err
	}
	out := consolidateResult{JobID: job.ID}
	if job.State != rivertype.JobStateCompleted {
		out.Status = string(job.State)
		out.Note = "the planner ended " + string(job.State) + "; 'mull dlq show " + fmt.Sprint(job.ID) + "' has its errors"
		return finishConsolidate(g, out, asJSON, &exitError{code: 1, err: fmt.Errorf("%s", out.Note)})
	}
	st, _, err := a.store.GetConsolidateState(ctx, a.store.DB, ws)
	if err != nil {
		return err
	}
	out.Note = st.LastNote
	runID := st.LastRunID
	if st.LastJobID != job.ID || runID == "" {
		out.Status = "skipped"
		fmt.Fprintln(progress, st.LastNote)
		return finishConsolidate(g, out, asJSON, nil)
	}
	out.RunID = runID
	fmt.Fprintf(progress, "run %s started\n", runID)
	run, err := followRun(ctx, a, runID, progress)
	if err != nil {
		return err
	}
	out.Status = run.Status
	for _, s := range run.Steps {
		out.Steps = append(out.Steps, consolidateStepOut{Name: s.Name, Status: s.Status, Error: s.Error})
	}
	if run.Status != store.WorkflowSucceeded {
		out.Note = fmt.Sprintf("run %s %s: %s ('mull workflows show %s' has its steps)", runID, run.Status, run.Error, runID)
		return finishConsolidate(g, out, asJSON, &exitError{code: 1, err: fmt.Errorf("%s", out.Note)})
	}
	for _, s := range run.Steps {
		if s.Name == "derive" && len(s.Output) > 0 {
			var c consolidate.Counts
			if err := json.Unmarshal(s.Output, &c); err != nil {
				return fmt.Errorf("run %s: derive output: %w", runID, err)
			}
			out.Counts = &c
		}
	}
	if st, _, err := a.store.GetConsolidateState(ctx, a.store.DB, ws); err == nil {
		out.Note = st.LastNote
	}
	return finishConsolidate(g, out, asJSON, nil)
}

// followRun polls a workflow run until it is no longer running, printing
// each merge chunk and the derive step as they finish.
func followRun(ctx context.Context, a *app, runID string, w io.Writer) (store.WorkflowRun, error) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	reported := map[string]bool{}
	for {
		run, err := a.runner.Get(ctx, runID)
		if err != nil && ctx.Err() == nil {
			return run, fmt.Errorf("follow run %s: %w", runID, err)
		}
		if err == nil {
			chunks := 0
			for _, s := range run.Steps {
				if strings.HasPrefix(s.Name, "merge_") {
					chunks++
				}
			}
			done := 0
			for _, s := range run.Steps {
				if strings.HasPrefix(s.Name, "merge_") && s.Status == store.WorkflowStepSucceeded {
					done++
				}
			}
			for _, s := range run.Steps {
				key := s.Name + "/" + s.Status
				if reported[key] || (s.Status != store.WorkflowStepSucceeded && s.Status != "failed") {
					continue
				}
				reported[key] = true
				fmt.Fprintln(w, stepLine(s, done, chunks))
			}
			if run.Status != store.WorkflowRunning {
				return run, nil
			}
		}
		select {
		case <-ctx.Done():
			return run, &exitError{code: 1, err: fmt.Errorf("stopped following run %s: it is still running and goes on ('mull workflows show %s')", runID, runID)}
		case <-tick.C:
		}
	}
}

func stepLine(s store.WorkflowStep, done, chunks int) string {
	if s.Status != store.WorkflowStepSucceeded {
		return fmt.Sprintf("%s %s: %s", s.Name, s.Status, s.Error)
	}
	if s.Name == "derive" {
		var c consolidate.Counts
		_ = json.Unmarshal(s.Output, &c)
		if !c.Derived {
			return "derive done: too few memories to derive principles from"
		}
		return fmt.Sprintf("derive done: %d principles, %d hypotheses, %d prefetch added; %d kept, %d replaced",
			c.Principles, c.Hypotheses, c.Prefetch, c.Kept, c.Replaced)
	}
	var o consolidate.MergeOutput
	_ = json.Unmarshal(s.Output, &o)
	return fmt.Sprintf("%s done (%d/%d chunks): %d clusters, %d merged, %d rejected, %d stale; %d tokens",
		s.Name, done, chunks, o.Clusters, o.Merged, o.Rejected, o.Stale, o.Tokens.Prompt+o.Tokens.Completion)
}

func finishConsolidate(g *globals, out consolidateResult, asJSON bool, fail error) error {
	if asJSON {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
		return fail
	}
	if fail != nil {
		return fail
	}
	if c := out.Counts; c != nil {
		tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "memories\t%d (%d candidate clusters in %d chunks)\n", c.Memories, c.Clusters, c.Chunks)
		fmt.Fprintf(tw, "merged\t%d clusters; %d memories superseded\n", c.Merged, c.Superseded)
		fmt.Fprintf(tw, "rejected\t%d merges (fidelity check); %d stale clusters\n", c.Rejected, c.Stale)
		fmt.Fprintf(tw, "derived\t%d principles, %d hypotheses, %d prefetch (%d kept, %d replaced)\n",
			c.Principles, c.Hypotheses, c.Prefetch, c.Kept, c.Replaced)
		failed := ""
		if c.Tokens.Failed > 0 {
			failed = fmt.Sprintf(" (%d failed)", c.Tokens.Failed)
		}
		fmt.Fprintf(tw, "llm\t%d %s%s; %d tokens in (%d cache hits), %d out; $%.6f\n",
			c.Tokens.Calls, plural(c.Tokens.Calls, "call", "calls"), failed, c.Tokens.Prompt, c.Tokens.CacheHit, c.Tokens.Completion, float64(c.Tokens.CostNano)/1e9)
		return tw.Flush()
	}
	return nil
}

// dryRunPlan is what --dry-run prints, and its --json.
type dryRunPlan struct {
	Workspace string `json:"workspace"`
	Memories  int    `json:"memories"`
	Since     int64  `json:"since"`
	New       int    `json:"new"`
	Clusters  []struct {
		Kind  string   `json:"kind"`
		IDs   []int64  `json:"ids"`
		Texts []string `json:"texts"`
	} `json:"clusters"`
	Chunks int `json:"chunks"`
	// EstimatedPromptTokens is the merge calls' input, at about 4
	// characters a token.
	EstimatedPromptTokens int `json:"estimated_prompt_tokens"`
}

func consolidateDryRun(ctx context.Context, g *globals, a *app, ws string, asJSON bool) error {
	rows, err := a.store.ListMemories(ctx, a.store.DB, store.MemoryFilter{Workspaces: []string{ws}, Oldest: true})
	if err != nil {
		return err
	}
	st, _, err := a.store.GetConsolidateState(ctx, a.store.DB, ws)
	if err != nil {
		return err
	}
	// The planner's own figures: the same live rows, the same candidates.
	all := memories.FromRows(rows)
	byID := make(map[int64]memory.Memory, len(all))
	for _, m := range all {
		byID[m.ID] = m
	}
	mergeable := slices.DeleteFunc(slices.Clone(all), func(m memory.Memory) bool { return m.Kind.SleepTime() })
	p := dryRunPlan{Workspace: ws, Memories: len(mergeable), Since: st.Watermark, New: rules.CountNew(all, st.Watermark)}
	clusters, chunks := rules.Candidates(all, byID, st.Watermark, a.cfg.Consolidate.ChunkChars, a.store.Now())
	p.Chunks = len(chunks)
	chars := 0
	for _, c := range chunks {
		chars += utf8.RuneCountInString(rules.MergePrompt) + utf8.RuneCountInString(rules.MergeInput(c, byID))
	}
	p.EstimatedPromptTokens = chars / 4
	for _, c := range clusters {
		var texts []string
		for _, id := range c.IDs {
			texts = append(texts, byID[id].Text)
		}
		p.Clusters = append(p.Clusters, struct {
			Kind  string   `json:"kind"`
			IDs   []int64  `json:"ids"`
			Texts []string `json:"texts"`
		}{string(c.Kind), c.IDs, texts})
	}
	if asJSON {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	fmt.Fprintf(g.stdout, "%q: %d live memories, %d new since memory %d\n", ws, p.Memories, p.New, p.Since)
	derive := "plus one derive call"
	if p.Memories < a.cfg.Consolidate.MinMemories {
		derive = fmt.Sprintf("no derive call (fewer than consolidate.min_memories = %d)", a.cfg.Consolidate.MinMemories)
	}
	fmt.Fprintf(g.stdout, "%d candidate clusters in %d chunks; about %d prompt tokens for the merges, %s\n",
		len(p.Clusters), p.Chunks, p.EstimatedPromptTokens, derive)
	for i, c := range p.Clusters {
		if i == 20 {
			fmt.Fprintf(g.stdout, "… and %d more clusters (--json lists them all)\n", len(p.Clusters)-20)
			break
		}
		fmt.Fprintf(g.stdout, "cluster %d (%s):\n", i+1, c.Kind)
		for j, id := range c.IDs {
			fmt.Fprintf(g.stdout, "  [%d] %s\n", id, oneLine(c.Texts[j], 160))
		}
	}
	fmt.Fprintln(g.stdout, "dry run: nothing was enqueued or changed")
	return nil
}

func newConsolidateStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [WORKSPACE]",
		Short: "Show each workspace's consolidation state",
		Long: `For each workspace consolidation has seen (or one): the watermark (the newest
memory its last finished run covered), sessions ended since its last run,
the run in flight, when the last run started and finished, and what the last
job decided.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			states, err := a.store.ListConsolidateStates(cmd.Context(), a.store.DB)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				states = slices.DeleteFunc(states, func(s store.ConsolidateState) bool { return s.Workspace != args[0] })
				if len(states) == 0 {
					return usageErr("workspace %q has no consolidation state yet (no session ended there and no run)", args[0])
				}
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(states)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKSPACE\tWATERMARK\tSESSIONS\tIN FLIGHT\tLAST STARTED\tLAST FINISHED\tLAST NOTE")
			for _, s := range states {
				fmt.Fprintf(tw, "%q\t%d\t%d\t%s\t%s\t%s\t%s\n", s.Workspace, s.Watermark, s.SessionsSince, orDash(s.RunID),
					timeOrDash(s.LastStartedAt), timeOrDash(s.LastFinishedAt), oneLine(s.LastNote, 120))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
