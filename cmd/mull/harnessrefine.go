package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/spf13/cobra"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/jobs/refinereview"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

func newHarnessRefineCmd(g *globals) *cobra.Command {
	var o refineOpts
	cmd := &cobra.Command{
		Use:   "refine [--session S] [--global] [--instruction TEXT]",
		Short: "Enqueue a manual refine_review and follow it until its edits are applied",
		Long: `Enqueue a manual refine_review job and follow it, like 'mull retro run': when
a worker takes it, when an attempt fails and when it retries. The planner
reads the session's trajectory (--session) and the target store, and
proposes edits; they are validated under the seed's rules and applied in the
job's completing transaction. A manual refine skips the review call (you
asked for it) and is not the automatic path, so protected kinds may change.
Then it prints the verdict and the refinement: each edit applied, or
rejected with the rule's message.

The target is the session's local store, or the global one with --global (a
global refine may go without --session; the planner then reads no
trajectory). --instruction focuses the planner ("save the retry pattern as a
skill"). Only one refine_review per store runs at a time: while one is
queued or running, the same refine again (same --session and --instruction)
follows that one; any other exits 1 with "a review of this store is already
queued as job N; try again after it".

A worker ('mull serve' or 'mull worker') must be running on the same
database. With --no-wait it only enqueues and prints the job id.

Exit status: 0 when the job completed (whatever the verdict); 1 when it was
cancelled or discarded ('mull dlq show ID'), --timeout passed (the job
stays queued) or another refine_review of the store is queued; 2 for an unknown session or a bad flag.

Examples:
  mull harness refine --session 01J9… --instruction "note why the build failed"
  mull harness refine --global --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.timeout <= 0 {
				return usageErr("--timeout %s: want a positive duration", o.timeout)
			}
			if o.session == "" && !o.global {
				return usageErr("--session is required unless --global: the session whose store and trajectory to refine")
			}
			if p := api.CheckInstruction(o.instruction); p != "" {
				return usageErr("--instruction: %s", p)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			return runRefine(cmd.Context(), g, a, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.session, "session", "", "the session whose trajectory the planner reads (and whose local store it edits unless --global)")
	f.BoolVar(&o.global, "global", false, "edit the global store instead of the session's local one")
	f.StringVar(&o.instruction, "instruction", "", "focus for the planner (at most 2000 characters)")
	f.BoolVar(&o.json, "json", false, "print the result as JSON (progress goes to stderr)")
	f.BoolVar(&o.noWait, "no-wait", false, "only enqueue the job and print its id")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "how long to follow the job before giving up (it stays queued)")
	return cmd
}

type refineOpts struct {
	session, instruction string
	global, json, noWait bool
	timeout              time.Duration
}

func runRefine(ctx context.Context, g *globals, a *app, o refineOpts) error {
	args := refinereview.Args{Global: o.global, Trigger: harness.Manual, Instruction: strings.TrimSpace(o.instruction),
		Source: harnesses.ByAdmin}
	if o.session != "" {
		sess, err := a.store.GetSession(ctx, o.session)
		if errors.Is(err, store.ErrNotFound) {
			return &exitError{code: 2, err: fmt.Errorf("no session %q: 'mull sessions list' shows the sessions mull has events from", o.session)}
		}
		if err != nil {
			return err
		}
		args.Session, args.Workspace = sess.ID, sess.Workspace
	}
	out := g.stdout
	if o.json {
		out = g.stderr
	}
	res, err := a.client.Insert(ctx, args, nil)
	if err != nil {
		return fmt.Errorf("enqueue refine_review: %w", err)
	}
	job := res.Job
	scope := args.Scope()
	if res.UniqueSkippedAsDuplicate {
		// Joining a job that is not this same request would drop the
		// instruction: refuse, naming the job.
		if err := api.CheckJoin(job, args); err != nil {
			return &exitError{code: 1, err: err}
		}
		fmt.Fprintf(out, "the same refine of the %s store is already queued or running: following job %d\n", scope, job.ID)
	} else {
		fmt.Fprintf(out, "enqueued as job %d: refine_review of the %s store (up to %d attempts)\n", job.ID, scope, job.MaxAttempts)
	}
	if o.noWait {
		if o.json {
			return printJSON(g, api.RefineStatus{JobID: job.ID, State: job.State, Attempt: job.Attempt, Errors: []string{}})
		}
		return nil
	}
	final, err := followJob(ctx, a, job.ID, out, followOpts{Timeout: o.timeout})
	if err != nil {
		return err
	}
	st, err := api.RefineJobStatus(ctx, a.client, a.harness, final.ID)
	if err != nil {
		return err
	}
	if o.json {
		err = printJSON(g, st)
	} else {
		printRefineStatus(g.stdout, st)
	}
	if err != nil || st.State == rivertype.JobStateCompleted {
		return err
	}
	return &exitError{code: 1, err: fmt.Errorf("refine_review job %d %s", st.JobID, st.State)}
}

// printRefineStatus prints a finished refine: the verdict, then the
// refinement's applied and rejected edits.
func printRefineStatus(w io.Writer, st api.RefineStatus) {
	if st.State != rivertype.JobStateCompleted {
		last := ""
		if n := len(st.Errors); n > 0 {
			last = ": " + oneLine(st.Errors[n-1], 500)
		}
		fmt.Fprintf(w, "refine_review job %d %s after attempt %d%s\n", st.JobID, st.State, st.Attempt, last)
	}
	r := st.Review
	if r == nil {
		if st.State == rivertype.JobStateCompleted {
			fmt.Fprintf(w, "refine_review job %d completed but recorded no review\n", st.JobID)
		}
		return
	}
	fmt.Fprintf(w, "review: %s (%s, %s store)\n", r.Outcome, r.Trigger, r.Scope)
	if r.Rationale != "" {
		fmt.Fprintf(w, "  rationale: %s\n", oneLine(r.Rationale, 300))
	}
	switch {
	case st.Refinement != nil:
		printRefinement(w, st.Refinement.Refinement)
	case st.Pending != "":
		fmt.Fprintf(w, "waiting for approval as proposal %s (harness.require_global_approval): 'mull proposals accept %s' applies it\n",
			st.Pending, st.Pending)
	case r.Outcome == harness.Assessed:
		fmt.Fprintln(w, "  no edit proposed")
	}
}
