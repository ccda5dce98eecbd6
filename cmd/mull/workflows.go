package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

func newWorkflowsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflows",
		Short: "List, show, cancel and demo workflow runs",
		Long: `A workflow run is a DAG of steps, each a River job: a step starts when all the
steps it comes after have succeeded, and reads their outputs. A step that uses
its last attempt fails the run and cancels the steps not yet started; retrying
that step's dead letter ('mull dlq retry') brings the run back.`,
	}
	cmd.AddCommand(newWorkflowsListCmd(g), newWorkflowsShowCmd(g), newWorkflowsCancelCmd(g), newWorkflowsDemoCmd(g))
	return cmd
}

func newWorkflowsListCmd(g *globals) *cobra.Command {
	var f store.WorkflowFilter
	var asJSON bool
	list := withApp(g, func(ctx context.Context, a *app, _ []string) error {
		runs, err := a.runner.List(ctx, f)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(g, nonNil(runs))
		}
		if len(runs) == 0 {
			fmt.Fprintln(g.stdout, "no workflow runs")
			return nil
		}
		tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tCREATED\tFINISHED\tERROR")
		for _, r := range runs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, r.Status, r.CreatedAt.Format(time.RFC3339),
				fmtTime(r.FinishedAt), oneLine(r.Error, 80))
		}
		return tw.Flush()
	})
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List workflow runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch f.Status {
			case "", store.WorkflowRunning, store.WorkflowSucceeded, store.WorkflowFailed, store.WorkflowCancelled:
			default:
				return usageErr("--status %q: want running, succeeded, failed or cancelled", f.Status)
			}
			return list(cmd, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Status, "status", "", "only runs in this status (running, succeeded, failed, cancelled)")
	fl.StringVar(&f.Name, "name", "", "only runs of this workflow")
	fl.IntVar(&f.Limit, "limit", 50, "at most this many (up to 1000)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newWorkflowsShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a run and each of its steps",
		Args:  cobra.ExactArgs(1),
		RunE: withApp(g, func(ctx context.Context, a *app, args []string) error {
			run, err := a.runner.Get(ctx, args[0])
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no workflow run %q", args[0])
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, run)
			}
			printRun(g, run)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printRun(g *globals, run store.WorkflowRun) {
	fmt.Fprintf(g.stdout, "run %s  workflow %s  status %s\ncreated %s  finished %s\n", run.ID, run.Name, run.Status,
		run.CreatedAt.Format(time.RFC3339), fmtTime(run.FinishedAt))
	if run.Error != "" {
		fmt.Fprintf(g.stdout, "error %s\n", run.Error)
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nSTEP\tKIND\tSTATUS\tJOB\tATTEMPTS\tAFTER\tOUTPUT / ERROR")
	for _, s := range run.Steps {
		detail := string(s.Output)
		if s.Error != "" {
			detail = s.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%v\t%s\n", s.Name, s.Kind, s.Status, s.JobID, s.Attempts, s.Deps, oneLine(detail, 70))
	}
	_ = tw.Flush()
}

func newWorkflowsCancelCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a run: steps not yet started never start",
		Args:  cobra.ExactArgs(1),
		RunE: withApp(g, func(ctx context.Context, a *app, args []string) error {
			if err := a.runner.Cancel(ctx, a.client, args[0]); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("no workflow run %q", args[0])
				}
				return err
			}
			fmt.Fprintf(g.stdout, "cancelled workflow run %s\n", args[0])
			return nil
		}),
	}
}

func newWorkflowsDemoCmd(g *globals) *cobra.Command {
	var parts int
	var work, timeout time.Duration
	var wait bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a demo workflow: split → N parts → join",
		Long: `Start the demo workflow, a three-level diamond: "split" fans out to parts
part_1…part_N, which fan in to "join". Each step waits --work, then outputs its
value plus its dependencies' outputs, so join's output is N(N+1)/2 + N exactly
when every step ran once in effect. Use it to check workflows end to end, or
to kill a worker mid-run and watch the run finish after a restart.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			def, err := workflows.Demo(parts, work)
			if err != nil {
				return usageErr("%v", err)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			var id string
			err = a.store.InTx(cmd.Context(), func(tx *sql.Tx) error {
				id, err = a.runner.Start(cmd.Context(), tx, a.client, def)
				return err
			})
			if err != nil {
				return fmt.Errorf("start demo: %w", err)
			}
			fmt.Fprintf(g.stdout, "started workflow run %s (%d steps; join should output %d)\n", id, len(def.Steps), workflows.DemoTotal(parts))
			if !wait {
				return nil
			}
			return waitRun(cmd, g, a, id, timeout)
		},
	}
	f := cmd.Flags()
	f.IntVar(&parts, "parts", 3, "parallel steps between split and join")
	f.DurationVar(&work, "work", 500*time.Millisecond, "how long each step pretends to work")
	f.BoolVar(&wait, "wait", false, "follow the run until it ends and print it")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return cmd
}

// waitRun polls a run until it leaves running, then prints it.
func waitRun(cmd *cobra.Command, g *globals, a *app, id string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for {
		run, err := a.runner.Get(cmd.Context(), id)
		if err != nil {
			return err
		}
		if run.Status != store.WorkflowRunning {
			printRun(g, run)
			fmt.Fprintf(g.stdout, "\nrun %s %s after %s\n", id, run.Status, time.Since(start).Round(time.Millisecond))
			if run.Status != store.WorkflowSucceeded {
				return &exitError{code: 1, err: fmt.Errorf("workflow run %s %s", id, run.Status)}
			}
			return nil
		}
		if time.Now().After(deadline) {
			return &exitError{code: 1, err: fmt.Errorf("workflow run %s still running after %s: is a worker running on this database?", id, timeout)}
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-tick.C:
		}
	}
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
