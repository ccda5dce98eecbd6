package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/negledger"
)

func newLedgerCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "List, show and retract the negative ledger's facts (seed 003); its three honest counters",
		Long: `The negative ledger records what has been proven not to work, with the
evidence: a command that exited non-zero (command_failed), a file a read did
not find (file_missing), and, sent explicitly over the API, a rejected
approach or an unavailable API. Before every tool call the DSH plugin asks
it (POST /v1/ledger/check): a repeat of a refuted path is warned about (warn
mode, the default) or denied before it runs (block mode) until its retry
condition is met (command_retry_after for commands) or its evidence changes
(a precondition witness differs: the fact is stale).

A fact's status is its history: active, stale (a precondition changed),
resolved (a retry succeeded, or a person retracted it) or superseded (it
failed again after it was resolved, and a newer fact took its place).

The same is on the admin API under /v1/admin/ledger/.`,
	}
	cmd.AddCommand(newLedgerListCmd(g), newLedgerShowCmd(g), newLedgerStaleCmd(g), newLedgerStatsCmd(g),
		newLedgerResolveCmd(g))
	return cmd
}

func newLedgerListCmd(g *globals) *cobra.Command {
	var f negledger.Filter
	var status string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List facts, newest first: id, status, kind, scope, claim",
		Long: `List facts, newest first, every version (a superseded one too): id, status,
kind, scope (the workspace) and claim. A claim never holds the raw command:
"command exited N (tool)", "file does not exist: PATH". --status takes
active, stale, resolved or superseded.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Status = ledger.Status(status)
			if f.Status != "" && !slices.Contains(api.LedgerStatuses, f.Status) {
				return usageErr("--status %q: want one of active, stale, resolved, superseded", status)
			}
			if f.Limit < 1 || f.Limit > 1000 {
				return usageErr("--limit %d: want 1 to 1000", f.Limit)
			}
			return listFacts(g, cmd, f, asJSON, "no facts")
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Workspace, "workspace", "", "only facts of this workspace (the DSH cwd)")
	fl.StringVar(&status, "status", "", "only facts in this status: active, stale, resolved, superseded")
	fl.IntVar(&f.Limit, "limit", 100, "at most this many (up to 1000)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newLedgerStaleCmd(g *globals) *cobra.Command {
	f := negledger.Filter{Status: ledger.Stale, CurrentOnly: true, Limit: 1000}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stale",
		Short: "List the current facts whose evidence changed (stale)",
		Long: `List the current facts a file observation made stale: a precondition witness
(a file's presence or version) differs from what the failure saw, so the
conclusion does not apply now and the next attempt may verify it. A stale
fact whose original evidence returns intercepts again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listFacts(g, cmd, f, asJSON, "no stale facts")
		},
	}
	cmd.Flags().StringVar(&f.Workspace, "workspace", "", "only facts of this workspace (the DSH cwd)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func listFacts(g *globals, cmd *cobra.Command, f negledger.Filter, asJSON bool, none string) error {
	a, err := g.open(cmd.Context(), manage)
	if err != nil {
		return err
	}
	defer a.close()
	facts, err := a.negledger.List(cmd.Context(), f)
	if err != nil {
		return err
	}
	if asJSON {
		if facts == nil {
			facts = []ledger.Fact{}
		}
		return printJSON(g, facts)
	}
	if len(facts) == 0 {
		fmt.Fprintln(g.stdout, none)
		return nil
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tKIND\tSCOPE\tCLAIM")
	for _, x := range facts {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", x.ID, x.Status, x.Kind, oneLine(x.Scope, 60), oneLine(x.Claim, 100))
	}
	return tw.Flush()
}

// factArg reads a fact id argument.
func factArg(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, usageErr("fact id %q: want a whole number from 1 (see mull ledger list)", s)
	}
	return id, nil
}

func newLedgerShowCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one fact as JSON: fingerprint, evidence, retry condition, counters, lease",
		Long: `Show one fact as formatted JSON, as the seed's show does: its fingerprint,
claim and preview, its evidence (outcome witnesses: the exit code, the error
code; precondition witnesses: the file states it depends on), its retry
condition, status, revision, its three counters, its last transition (a
person's reason for retracting it) and the retry lease held on it, if any.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := factArg(args[0])
			if err != nil {
				return err
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			f, err := a.negledger.Get(cmd.Context(), id)
			if errors.Is(err, negledger.ErrNotFound) {
				return fmt.Errorf("no fact with id %d", id)
			}
			if err != nil {
				return err
			}
			return printJSON(g, f)
		},
	}
	return cmd
}

func newLedgerStatsCmd(g *globals) *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "The three honest counters: duplicate failures observed, warnings emitted, calls denied",
		Long: `The seed's three honest counters, each meaningful on its own:

  duplicate failures observed  a later attempt ran and failed the same way
                               again (observed, not prevented)
  warnings emitted             notes attached to results that ran (warn mode;
                               a repeat deduped within warning_repeat_after
                               counts as a duplicate, not a warning)
  calls denied                 denies before dispatch (block mode): the only
                               counter that proves an execution was avoided

Token savings are not estimated here. Then each fact that warned or denied.`,
		Args: cobra.NoArgs,
		RunE: withApp(g, func(ctx context.Context, a *app, _ []string) error {
			sum, err := a.negledger.Stats(ctx, workspace)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, sum)
			}
			facts, err := a.negledger.List(ctx, negledger.Filter{Workspace: workspace, Limit: 1000})
			if err != nil {
				return err
			}
			printLedgerStats(g, sum, facts)
			return nil
		}),
	}
	cmd.Flags().StringVar(&workspace, "workspace", "", "only this workspace (the DSH cwd)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printLedgerStats(g *globals, sum ledger.Summary, facts []ledger.Fact) {
	fmt.Fprintf(g.stdout, "facts: %d (current %d, hit %d)\n", sum.Facts, sum.Current, sum.FactsHit)
	fmt.Fprintf(g.stdout, "duplicate failures observed: %d\n", sum.DuplicateFailuresObserved)
	fmt.Fprintf(g.stdout, "warnings emitted: %d\n", sum.WarningsEmitted)
	fmt.Fprintf(g.stdout, "calls denied: %d\n", sum.CallsDenied)
	for _, f := range facts {
		if f.Savings.WarningsEmitted+f.Savings.CallsDenied == 0 {
			continue
		}
		fmt.Fprintf(g.stdout, "hit: %d %s — warnings %d, denied %d — %s\n", f.ID, f.Kind,
			f.Savings.WarningsEmitted, f.Savings.CallsDenied, oneLine(f.Claim, 100))
	}
}

func newLedgerResolveCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "resolve ID --reason R",
		Short: "Retract a fact by hand: it stops intercepting, with your reason kept",
		Long: `Retract a fact a person knows no longer holds (the tool was fixed, the file
was restored by hand): it becomes resolved, stops intercepting, and keeps
your reason and "operator" in its last transition. A later identical failure
records a new fact and supersedes this one. --reason is required, at most
500 characters. The same as POST /v1/admin/ledger/facts/ID/resolve.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := factArg(args[0])
			if err != nil {
				return err
			}
			if problem := api.CheckResolveReason(reason); problem != "" {
				return usageErr("--reason: %s", problem)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			f, err := a.negledger.Resolve(cmd.Context(), id, strings.TrimSpace(reason))
			if errors.Is(err, negledger.ErrNotFound) {
				return fmt.Errorf("no fact with id %d", id)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "fact %d resolved (revision %d): %s\n", f.ID, f.Revision, oneLine(f.Claim, 100))
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the fact no longer holds (required, at most 500 characters)")
	return cmd
}
