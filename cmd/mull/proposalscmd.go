package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

func newProposalsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "proposals",
		Short: "List, show, accept and reject the retros' improvement proposals",
		Long: `A retro may propose one improvement to the agent's setup (a command, a
check, a habit). A workspace has at most one proposal pending: the digest shows
it to the agent until you decide. Accept it when you have made the change;
reject it with a note saying why, and the note is kept as a lesson of the
workspace (your word: src user, origin command), so later retros learn from it.
A decision stands: a decided proposal cannot be decided again.`,
	}
	cmd.AddCommand(newProposalsListCmd(g), newProposalsShowCmd(g),
		newProposalDecideCmd(g, store.ProposalAccepted), newProposalDecideCmd(g, store.ProposalRejected))
	return cmd
}

func newProposalsListCmd(g *globals) *cobra.Command {
	var ws, status string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List proposals, oldest first",
		Args:  cobra.NoArgs,
		RunE: withApp(g, func(ctx context.Context, a *app, _ []string) error {
			list, err := a.memories.Proposals(ctx, ws, status)
			if err != nil {
				return flagError(err)
			}
			if asJSON {
				return printJSON(g, nonNil(list))
			}
			if len(list) == 0 {
				fmt.Fprintln(g.stdout, "no proposals")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tWORKSPACE\tSTATUS\tPROPOSED\tDECIDED\tBY\tSUMMARY")
			for _, p := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.Workspace, p.Status, p.CreatedAt.Format(time.RFC3339),
					timeOrDash(p.DecidedAt), decider(p), oneLine(p.Summary, 70))
			}
			return tw.Flush()
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&ws, "workspace", "", "only this workspace's proposals (the DSH cwd); default: every workspace")
	fl.StringVar(&status, "status", "", "only proposals in this status: pending, accepted or rejected")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newProposalsShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one proposal in full, with its decision",
		Args:  cobra.ExactArgs(1),
		RunE: withApp(g, func(ctx context.Context, a *app, args []string) error {
			p, err := a.memories.Proposal(ctx, args[0])
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no proposal %s", args[0])
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, p)
			}
			printProposal(g, p)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// newProposalDecideCmd is accept or reject, by status.
func newProposalDecideCmd(g *globals, status string) *cobra.Command {
	var note string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "accept ID [--note \"…\"]",
		Short: "Accept a pending proposal (you made the change, or will)",
		Long: `Accept marks a pending proposal accepted, with an optional note; the digest
stops showing it and the workspace may get its next proposal.`,
		Args: cobra.ExactArgs(1),
	}
	if status == store.ProposalRejected {
		cmd.Use = "reject ID --note \"why\""
		cmd.Short = "Reject a pending proposal, saying why (kept as a lesson)"
		cmd.Long = `Reject marks a pending proposal rejected. The note is required: it is written
back, in the same transaction, as a lesson of the proposal's workspace
("proposal rejected: <summary> -> <note>", src user, origin command), so the
agent and later retros know not to propose it again. The same lesson already
remembered gets one more use instead of a copy.`
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		a, err := g.open(cmd.Context(), manage)
		if err != nil {
			return err
		}
		defer a.close()
		if p, err := a.store.GetProposal(cmd.Context(), a.store.DB, args[0]); err == nil && p.Kind == store.ProposalHarness {
			return decideHarnessProposal(g, cmd, a, args[0], status, note, asJSON)
		}
		d, err := a.memories.DecideProposal(cmd.Context(), args[0], status, note, store.DecidedByCLI)
		var fe *memory.FieldError
		switch {
		case errors.As(err, &fe):
			return usageErr("--%s", fe)
		case errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("no proposal %s", args[0])
		case err != nil:
			return err
		case asJSON:
			return printJSON(g, d)
		}
		fmt.Fprintf(g.stdout, "%s proposal %s: %s\n", d.Proposal.Status, d.Proposal.ID, oneLine(d.Proposal.Summary, 100))
		if l := d.Lesson; l != nil {
			printLesson(g, l)
		}
		return nil
	}
	help := "why you accept it (optional)"
	if status == store.ProposalRejected {
		help = "why you reject it (required; kept as a lesson, up to 300 characters)"
	}
	cmd.Flags().StringVar(&note, "note", "", help)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printLesson(g *globals, l *memories.Written) {
	switch {
	case l.Memory.Quarantined:
		fmt.Fprintf(g.stdout, "the note was kept as lesson memory %d, quarantined (%s): it is never served\n", l.Memory.ID, l.Memory.QuarantineReason)
	case l.Duplicate:
		fmt.Fprintf(g.stdout, "the note was already a lesson: memory %d (uses now %d)\n", l.Memory.ID, l.Memory.Uses)
	default:
		fmt.Fprintf(g.stdout, "kept the note as lesson memory %d: %s\n", l.Memory.ID, l.Memory.Text)
	}
}

func printProposal(g *globals, p memories.Proposal) {
	fmt.Fprintf(g.stdout, "proposal %s  %s\nworkspace %s\n", p.ID, p.Status, p.Workspace)
	fmt.Fprintf(g.stdout, "summary %s\n", p.Summary)
	fmt.Fprintf(g.stdout, "proposed %s by job %d (session %s)\n", p.CreatedAt.Format(time.RFC3339), p.JobID, p.SessionID)
	if !p.DecidedAt.IsZero() {
		fmt.Fprintf(g.stdout, "%s %s by %s", p.Status, p.DecidedAt.Format(time.RFC3339), decider(p))
		if p.Note != "" {
			fmt.Fprintf(g.stdout, ": %s", p.Note)
		}
		fmt.Fprintln(g.stdout)
	}
	if p.Detail != "" {
		fmt.Fprintf(g.stdout, "\n%s\n", p.Detail)
	}
}

// decider is who decided p: "-" while pending, "unknown" when it was
// decided before mull recorded who decides.
func decider(p memories.Proposal) string {
	switch {
	case p.DecidedAt.IsZero():
		return "-"
	case p.DecidedBy == "":
		return "unknown"
	}
	return p.DecidedBy
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}
