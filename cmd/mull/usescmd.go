package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// newMemoryUsesCmd is `mull memory uses ID`: the rows behind a memory's
// uses, as the panel's /memories/{id}/uses and the admin API list them.
func newMemoryUsesCmd(g *globals) *cobra.Command {
	var limit, offset int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "uses ID",
		Short: "List a memory's logged uses, newest first: what used it, the workspace, job and session",
		Long: `Each use of a memory is logged with the count it moves: a search that
returned it (search), a write of the same text (write), a moved memory that
repeated it (move), a retro's or a reflection's repeat (retro, reflection,
with the job and the session). Uses counted before mull kept this log, or
carried over when the memory was written (a move, a promotion, a merge, an import), are
in its total but have no row: the first line says how many.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := memoryID(args[0])
			if err != nil {
				return err
			}
			if limit < 1 || offset < 0 {
				return usageErr("--limit: want 1 or more, --offset 0 or more")
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			out, err := a.memories.Uses(cmd.Context(), id, limit, offset)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no memory %d", id)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, out)
			}
			printTotals(g, "memory "+args[0], "uses", out.Uses)
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AT\tCAUSE\tWORKSPACE\tJOB\tSESSION\tORIGIN")
			for _, u := range out.Rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.At.Format(time.RFC3339), u.Cause, dash(termSafe(u.Workspace)), jobCell(u.JobID),
					dash(termSafe(u.SessionID)), dash(u.Origin))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return printNext(g, out.Next)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "rows to print")
	cmd.Flags().IntVar(&offset, "offset", 0, "rows to skip (the newest)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// newPlaybooksUsesCmd is `mull playbooks uses --workspace W [--slug S]
// [--outcome success|fail]`: the rows behind a playbook's uses, successes
// and fails.
func newPlaybooksUsesCmd(g *globals) *cobra.Command {
	var f store.PlaybookUseFilter
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "uses --workspace W [--slug S] [--outcome success|fail]",
		Short: "List the logged uses of a workspace's playbooks, newest first, with who reported them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case f.Workspace == "":
				return usageErr("--workspace: required (the DSH cwd)")
			case f.Outcome != "" && f.Outcome != store.OutcomeSuccess && f.Outcome != store.OutcomeFail:
				return usageErr("--outcome %q: want %s or %s", f.Outcome, store.OutcomeSuccess, store.OutcomeFail)
			case f.Limit < 1 || f.Offset < 0:
				return usageErr("--limit: want 1 or more, --offset 0 or more")
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			out, err := a.memories.PlaybookUses(cmd.Context(), f)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no playbook %s in workspace %s", f.Slug, f.Workspace)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, out)
			}
			what, noun := "playbooks of "+termSafe(f.Workspace), map[string]string{"": "uses", store.OutcomeSuccess: "successes", store.OutcomeFail: "fails"}[f.Outcome]
			if f.Slug != "" {
				what = "playbook " + termSafe(f.Slug) + " of " + termSafe(f.Workspace)
			}
			printTotals(g, what, noun, out.Uses)
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AT\tPLAYBOOK\tOUTCOME\tREPORTED BY\tSESSION")
			for _, u := range out.Rows {
				outcome := store.OutcomeFail
				if u.Success {
					outcome = store.OutcomeSuccess
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.At.Format(time.RFC3339), termSafe(u.Slug), outcome, dash(u.ReportedBy), dash(termSafe(u.SessionID)))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return printNext(g, out.Next)
		},
	}
	cmd.Flags().StringVar(&f.Workspace, "workspace", "", "the workspace (the DSH cwd); required")
	cmd.Flags().StringVar(&f.Slug, "slug", "", "one playbook's uses")
	cmd.Flags().StringVar(&f.Outcome, "outcome", "", "success or fail")
	cmd.Flags().IntVar(&f.Limit, "limit", 50, "rows to print")
	cmd.Flags().IntVar(&f.Offset, "offset", 0, "rows to skip (the newest)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printTotals says how many of a total the log lists, and why the rest
// are not listed.
func printTotals(g *globals, what, noun string, t memories.UseTotals) {
	fmt.Fprintf(g.stdout, "%s: %d %s", what, t.Total, noun)
	if t.Unlogged > 0 {
		fmt.Fprintf(g.stdout, ": %d logged, %d counted before mull kept a use log (or carried over when written)", t.Logged, t.Unlogged)
	}
	fmt.Fprintln(g.stdout)
}

func printNext(g *globals, next int) error {
	if next > 0 {
		_, err := fmt.Fprintf(g.stdout, "more: --offset %d\n", next)
		return err
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func jobCell(id int64) string {
	if id == 0 {
		return "-"
	}
	return fmt.Sprint(id)
}
