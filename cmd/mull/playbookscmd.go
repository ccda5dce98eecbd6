package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newPlaybooksCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "playbooks",
		Short: "List the workspace playbooks the retros wrote, with their track record",
		Long: `A playbook is a reusable procedure a retro found (the seed's PLAYBOOK:<slug>):
a slug and its steps, per workspace. The agent reports each use with
POST /v1/playbooks/{slug}/use; a success verifies it. Its rate is
(successes+1)/(uses+2), and it is stale after 30 days without a success
(counted from when it was written if it never succeeded).
The digest lists fresh ones first, then by rate, then by uses; so does this.`,
	}
	cmd.AddCommand(newPlaybooksListCmd(g), newPlaybooksUsesCmd(g))
	return cmd
}

func newPlaybooksListCmd(g *globals) *cobra.Command {
	var ws string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list --workspace W",
		Short: "List a workspace's playbooks in the digest's order",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ws == "" {
				return usageErr("--workspace: required (the DSH cwd)")
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			list, err := a.memories.Playbooks(cmd.Context(), ws)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, nonNil(list))
			}
			if len(list) == 0 {
				fmt.Fprintln(g.stdout, "no playbooks")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SLUG\tUSES\tOK\tFAILED\tRATE\tSTALE\tVERIFIED\tSTEPS")
			for _, p := range list {
				verified := "never"
				if p.VerifiedAt != nil {
					verified = p.VerifiedAt.Format(time.RFC3339)
				}
				stale := "no"
				if p.Stale {
					stale = "yes"
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%s\t%s\t%s\n", p.Slug, p.Uses, p.Successes, p.Fails, p.Rate, stale, verified,
					oneLine(strings.Join(p.Steps, " → "), 60))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&ws, "workspace", "", "the workspace (the DSH cwd); required")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
