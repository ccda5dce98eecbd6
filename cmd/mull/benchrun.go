package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/benches"
)

// benchWaitOpts are the flags of a command that starts a run.
type benchWaitOpts struct {
	wait, json bool
	timeout    time.Duration
}

func (o *benchWaitOpts) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.wait, "wait", false, "follow the run until it is decided, with progress lines (cells done/total, failed, tokens, cost)")
	f.DurationVar(&o.timeout, "timeout", time.Hour, "with --wait: how long to follow before giving up (the run goes on)")
	f.BoolVar(&o.json, "json", false, "print the run as JSON (progress goes to stderr)")
}

const benchExit = `
Exit status: 0 when the run started (without --wait), or was decided,
ACCEPTED or REJECTED alike (the decision is printed); 1 when it was refused
(no frozen cases, an unknown snapshot or refinement, a candidate that is
not the reference plus exactly the refinement), when its workflow failed or
was cancelled, or when --timeout passed (the run goes on: 'mull bench show
RUN'); 2 for a bad flag.`

func newBenchRunCmd(g *globals) *cobra.Command {
	var r benches.RunRequest
	var o benchWaitOpts
	cmd := &cobra.Command{
		Use:   "run REFINEMENT --reference SNAP [--set SET] [--runs N] [--workspace W] [--wait]",
		Short: "A/B a refinement: the reference snapshot against it plus exactly that refinement",
		Long: `Start an A/B run of a refinement: the frozen cases (of --set, or every
frozen case) run --runs times (bench.default_runs, at most bench.max_runs)
on the reference snapshot and on the candidate, the reference plus exactly
the refinement's applied edits. The candidate is checked before anything
runs: if the refinement is not in the snapshot's stores, or anything else
was committed to them after the capture, the run is refused with
benchmark:run:candidate-delta and nothing is stored.

Cells run in parallel as retried bench_cell jobs; their LLM calls charge
--workspace's budget key (and the global one). A failed cell (after its
retries) has no score. The decision is made by code when every cell is in.
With bench.executor = dsh a run needs MULL_ADMIN_TOKEN and MULL_API_TOKEN
set (see 'mull bench memory --help').
` + benchExit + `

Examples:
  mull bench capture --id before
  mull harness apply add-retry-skill.json        # prints refine_…
  mull bench run refine_12 --reference before --set demo --runs 3 --wait`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if r.Reference == "" {
				return usageErr("--reference is required: the snapshot captured before the refinement applied")
			}
			r.Refinement, r.By = args[0], "cli"
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			run, err := a.bench.StartRun(cmd.Context(), a.client, r)
			if err != nil {
				return benchErr(err)
			}
			return afterStart(cmd.Context(), g, a, run, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.Reference, "reference", "", "the reference snapshot ('mull bench capture', before the refinement)")
	f.StringVar(&r.Set, "set", "", "run only this set's frozen cases (default: every frozen case)")
	f.IntVar(&r.Runs, "runs", 0, "iterations per case and side (default bench.default_runs; at most bench.max_runs)")
	f.StringVar(&r.Workspace, "workspace", "", "the budget key the cells charge (default: the global budget only)")
	o.flags(cmd)
	return cmd
}

func newBenchMemoryCmd(g *globals) *cobra.Command {
	var r benches.MemoryRunRequest
	var o benchWaitOpts
	cmd := &cobra.Command{
		Use:   "memory --cases SET --workspace W [--runs N] [--wait]",
		Short: "Does the memory help? A/B the set's frozen cases without and with the workspace's digest",
		Long: `Start a memory A/B run: the frozen cases of SET run --runs times without
memory (the reference) and with the workspace's memory digest as DSH would
inject it now (the candidate). Both sides are stored as snapshots. The
decision and each case's delta (candidate mean − reference mean) say what
mull's memory is worth on these tasks: mull measuring its own learning
effect.

With bench.executor = dsh each cell is a real DSH headless session, the
side's snapshot injected by mull's DSH plugin (its benchSnapshot mode);
such a run needs MULL_ADMIN_TOKEN and MULL_API_TOKEN set (here and for mull
serve): without the first every loopback caller, a cell's agent included,
is mull's admin; without the second any caller may write memories.
` + benchExit + `

Examples:
  mull bench cases add --file examples/bench-cases.json
  mull bench cases freeze --set demo
  mull bench memory --cases demo --runs 2 --wait            # the current directory's memory
  mull bench memory --cases demo --workspace ~/src/app --wait`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case r.Set == "":
				return usageErr("--cases is required: the set of frozen cases to run")
			}
			if r.Workspace == "" {
				// DSH's workspace is the directory it runs in: so is
				// this command's, by default.
				wd, err := os.Getwd()
				if err != nil {
					return usageErr("--workspace is required here (the current directory is unreadable: %v)", err)
				}
				r.Workspace = wd
			}
			r.By = "cli"
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			run, err := a.bench.StartMemoryRun(cmd.Context(), a.client, r)
			if err != nil {
				return benchErr(err)
			}
			return afterStart(cmd.Context(), g, a, run, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.Set, "cases", "", "the set of frozen cases to run")
	f.StringVar(&r.Workspace, "workspace", "", "the workspace whose digest the candidate is shown, and whose budget the cells charge (default: the current directory, as DSH names it)")
	f.IntVar(&r.Runs, "runs", 0, "iterations per case and side (default bench.default_runs; at most bench.max_runs)")
	o.flags(cmd)
	return cmd
}

// afterStart prints a started run, and follows it with --wait.
func afterStart(ctx context.Context, g *globals, a *app, run benches.Run, o benchWaitOpts) error {
	out := g.stdout
	if o.json {
		out = g.stderr
	}
	fmt.Fprintf(out, "started %s: %d cases × 2 sides × %d runs = %d cells (executor %s)\n",
		run.ID, len(run.CaseIDs), run.Runs, run.Total, run.Executor)
	if !o.wait {
		fmt.Fprintf(out, "follow it with: mull bench show %s\n", run.ID)
		if o.json {
			return printJSON(g, run)
		}
		return nil
	}
	final, err := followBenchRun(ctx, a, run.ID, out, runFollowOpts{Timeout: o.timeout})
	if err != nil {
		return err
	}
	if o.json {
		err = printJSON(g, final)
	} else {
		printBenchRun(g.stdout, final)
	}
	if err != nil || final.Decision != nil {
		return err
	}
	return &exitError{code: 1, err: fmt.Errorf("run %s %s without a decision", final.ID, final.Status)}
}
