package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/spf13/cobra"

	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/store"
)

func newRetroCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "retro",
		Short: "Run session retrospectives by hand",
		Long: `A retrospective (a retro_session job) reads one session's evidence, asks the
model what to remember, and applies the answer to the workspace's memory
library: memories, the handoff, playbooks and at most one proposal. mull runs
one when a primary session ends; 'mull retro run' runs one now.`,
	}
	cmd.AddCommand(newRetroRunCmd(g))
	return cmd
}

func newRetroRunCmd(g *globals) *cobra.Command {
	var asJSON, noWait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "run SESSION",
		Short: "Enqueue a session's retro and follow it until it is applied",
		Long: `Enqueue a retro_session job for SESSION (an id from 'mull sessions list') and
follow it: when a worker takes it, when an attempt fails and when it retries.
Then print what it applied (memories added, bumped, invalidated and rejected;
the handoff; playbooks; a proposal; under memory.scope both, the memories
promoted to the global library) and what it cost: tokens in, of which
prompt-cache hits, and out, and USD, from the job's LLM call records.

Every run is a job of its own, even for a session that already had its retro;
lessons the library already holds are bumped, not added again.

A worker ('mull serve' or 'mull worker') must be running on the same database:
this command only enqueues and watches. With --no-wait it only enqueues and
prints the job id.

Exit status: 0 when the retro was applied; 1 when the job was cancelled or
discarded ('mull dlq show ID' has every attempt's error) or --timeout passed
(the job stays queued); 2 for an unknown session or a bad flag.`,
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
			return runRetro(cmd.Context(), g, a, args[0], retroRunOpts{json: asJSON, noWait: noWait, timeout: timeout})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the result as JSON (progress goes to stderr)")
	f.BoolVar(&noWait, "no-wait", false, "only enqueue the job and print its id")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "how long to follow the job before giving up (it stays queued)")
	return cmd
}

type retroRunOpts struct {
	json, noWait bool
	timeout      time.Duration
}

// retroResult is what `retro run` reports, and its --json.
type retroResult struct {
	JobID       int64  `json:"job_id"`
	SessionID   string `json:"session_id"`
	Workspace   string `json:"workspace"`
	State       string `json:"state"`
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"max_attempts"`
	// Applied: the retro's changes were committed with the job.
	Applied bool                 `json:"applied"`
	Counts  *retrosession.Counts `json:"counts,omitempty"`
	// Error is the last attempt's error of a job that did not apply.
	Error    string        `json:"error,omitempty"`
	LLM      retroLLMUsage `json:"llm"`
	Duration string        `json:"duration,omitempty"`
}

// retroLLMUsage sums the job's LLM calls, failed attempts' included.
type retroLLMUsage struct {
	Calls            int64   `json:"calls"`
	Failed           int64   `json:"failed"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CacheHitTokens   int64   `json:"cache_hit_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	CostUSD          float64 `json:"cost_usd"`
}

func runRetro(ctx context.Context, g *globals, a *app, sessionID string, o retroRunOpts) error {
	sess, err := a.store.GetSession(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return &exitError{code: 2, err: fmt.Errorf("no session %q: 'mull sessions list' shows the sessions mull has events from", sessionID)}
	}
	if err != nil {
		return err
	}
	// Progress goes where the result does not.
	out := g.stdout
	if o.json {
		out = g.stderr
	}
	args := retrosession.Args{SessionID: sess.ID, Requested: time.Now().UTC().Format(time.RFC3339Nano)}
	res, err := a.client.Insert(ctx, args, nil)
	if err != nil {
		return fmt.Errorf("enqueue the retro of session %s: %w", sess.ID, err)
	}
	job := res.Job
	fmt.Fprintf(out, "enqueued as job %d: retro_session of session %s (workspace %s, up to %d attempts)\n",
		job.ID, sess.ID, sess.Workspace, job.MaxAttempts)
	if o.noWait {
		if o.json {
			return printJSON(g, retroResult{JobID: job.ID, SessionID: sess.ID, Workspace: sess.Workspace,
				State: string(job.State), Attempt: job.Attempt, MaxAttempts: job.MaxAttempts})
		}
		return nil
	}
	final, err := followJob(ctx, a, job.ID, out, followOpts{Timeout: o.timeout})
	if err != nil {
		return err
	}
	r, err := retroOutcome(ctx, a.store, sess, final)
	if err != nil {
		return err
	}
	if o.json {
		err = printJSON(g, r)
	} else {
		printRetro(g.stdout, r)
	}
	if err != nil || r.Applied {
		return err
	}
	return &exitError{code: 1, err: fmt.Errorf("the retro of session %s was not applied: job %d %s", sess.ID, r.JobID, r.State)}
}

// retroOutcome reads what a finished retro job did: its applied marker's
// counts and its LLM calls.
func retroOutcome(ctx context.Context, st *store.Store, sess store.Session, job *rivertype.JobRow) (retroResult, error) {
	r := retroResult{JobID: job.ID, SessionID: sess.ID, Workspace: sess.Workspace, State: string(job.State),
		Attempt: job.Attempt, MaxAttempts: job.MaxAttempts}
	if job.FinalizedAt != nil {
		r.Duration = job.FinalizedAt.Sub(job.CreatedAt).Round(time.Millisecond).String()
	}
	if n := len(job.Errors); n > 0 && job.State != rivertype.JobStateCompleted {
		r.Error = job.Errors[n-1].Error
	}
	run, ok, err := st.GetRetroRun(ctx, st.DB, job.ID)
	if err != nil {
		return r, err
	}
	if ok {
		var c retrosession.Counts
		if err := json.Unmarshal([]byte(run.Counts), &c); err != nil {
			return r, fmt.Errorf("read the counts of retro job %d: %w", job.ID, err)
		}
		r.Applied, r.Counts = true, &c
	}
	sums, err := st.SumLLMCalls(ctx, "job", store.LLMCallFilter{JobID: job.ID})
	if err != nil {
		return r, err
	}
	for _, s := range sums {
		r.LLM = retroLLMUsage{Calls: s.Calls, Failed: s.Failed, PromptTokens: s.PromptTokens,
			CacheHitTokens: s.CacheHitTokens, CompletionTokens: s.CompletionTokens, CostUSD: usd(s.CostNanoUSD)}
	}
	return r, nil
}

// printRetroRows prints the rows behind a retro's memory counts: the ids
// it added, bumped and invalidated, and each rejected entry's field and
// reason (never its text). A retro from before mull kept them has none.
func printRetroRows(w io.Writer, c retrosession.Counts) {
	ids := func(label string, list []int64) {
		if len(list) == 0 {
			return
		}
		s := make([]string, len(list))
		for i, id := range list {
			s[i] = fmt.Sprintf("#%d", id)
		}
		fmt.Fprintf(w, "  %-10s %s\n", label+":", strings.Join(s, ", "))
	}
	ids("added", c.AddedIDs)
	ids("bumped", c.BumpedIDs)
	ids("invalidated", c.InvalidatedIDs)
	for _, r := range c.RejectedItems {
		fmt.Fprintf(w, "  rejected:  %s: %s\n", termSafe(r.Field), termSafe(r.Reason))
	}
	if !c.Rows && c.Added+c.Bumped+c.Invalidated+c.Rejected > 0 {
		fmt.Fprintln(w, "  note:      this retro ran before mull kept the ids behind its counts")
	}
}

// printRetro prints a finished retro for a person.
func printRetro(w io.Writer, r retroResult) {
	switch {
	case r.Applied:
		fmt.Fprintf(w, "retro of session %s applied by job %d (attempt %d/%d, %s)\n", r.SessionID, r.JobID, r.Attempt, r.MaxAttempts, r.Duration)
	case r.State == string(rivertype.JobStateCompleted):
		fmt.Fprintf(w, "retro job %d completed but recorded no retro of session %s\n", r.JobID, r.SessionID)
	default:
		fmt.Fprintf(w, "retro job %d %s after %d/%d attempts: %s\n", r.JobID, r.State, r.Attempt, r.MaxAttempts, oneLine(r.Error, 500))
	}
	if c := r.Counts; c != nil {
		fmt.Fprintf(w, "  memories:  %d added, %d bumped, %d invalidated, %d rejected\n", c.Added, c.Bumped, c.Invalidated, c.Rejected)
		printRetroRows(w, *c)
		if c.Redacted > 0 {
			fmt.Fprintf(w, "  redacted:  %d secrets removed\n", c.Redacted)
		}
		if c.Quarantined > 0 {
			fmt.Fprintf(w, "  quarantined: %d texts read like instructions; kept for review, never served\n", c.Quarantined)
		}
		handoff := yesNo(c.Handoff, "written", "none")
		if c.HandoffStale {
			handoff = "not stored: the workspace's is from a later session"
		}
		fmt.Fprintf(w, "  handoff:   %s\n", handoff)
		fmt.Fprintf(w, "  playbooks: %d stored\n", c.Playbooks)
		proposal := yesNo(c.Proposal, "stored (pending)", "none stored")
		if c.ProposalRefused {
			proposal = "not stored: the user rejected the same before"
		}
		fmt.Fprintf(w, "  proposal:  %s\n", proposal)
		if c.Promoted > 0 {
			fmt.Fprintf(w, "  promoted:  %d to the global library\n", c.Promoted)
		}
		if c.Truncated {
			fmt.Fprintln(w, "  note:      the answer was cut off; only its additive sections were applied")
		}
	}
	u := r.LLM
	failed := ""
	if u.Failed > 0 {
		failed = fmt.Sprintf(", %d failed", u.Failed)
	}
	fmt.Fprintf(w, "  tokens:    %d in (%d cache hits), %d out, over %d %s%s\n", u.PromptTokens, u.CacheHitTokens, u.CompletionTokens,
		u.Calls, yesNo(u.Calls == 1, "call", "calls"), failed)
	fmt.Fprintf(w, "  cost:      $%.6f\n", u.CostUSD)
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}
