package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/overhead"
)

func newReportCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Reports on what mull costs and does",
	}
	cmd.AddCommand(newReportOverheadCmd(g))
	return cmd
}

func newReportOverheadCmd(g *globals) *cobra.Command {
	var since, workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "overhead",
		Short: "The agent's tokens and cost next to mull's own LLM cost, per workspace and day",
		Long: `Sets what the DSH agent spent beside what mull's learning spent on it, per
workspace and UTC day, then per workspace and in all.

AGENT: the agent's model responses (usage events, imported from DSH's logs or
pushed by the bridge plugin), its prompt tokens (cache hits included) and
output tokens, priced with mull's price table (llm.prices): cache hits at the
cache-hit price, each step at the peak or off-peak rate of its own time.
Steps whose model the table lacks are counted but not priced (UNPRICED).

MULL: mull's own LLM calls for the workspace, every kind (retro_session,
retro_error, consolidate…), from the call records 'mull llm calls' lists.

RATIO is mull's cost over the agent's ("-" when the agent cost nothing);
CACHE HIT is the part of mull's prompt tokens DeepSeek's prefix cache served.`,
		Example: `  mull report overhead
  mull report overhead --since 7d --workspace /home/dev/app
  mull report overhead --since 2026-11-29 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var f overhead.Filter
			f.Workspace = workspace
			if since != "" {
				t, err := overhead.ParseSince(since, time.Now())
				if err != nil {
					return usageErr("--since %q: %v", since, err)
				}
				f.Since = t
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			r, err := overhead.Build(cmd.Context(), a.store, llm.NewPricing(a.cfg.LLM), f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, r)
			}
			return printOverhead(g.stdout, r)
		},
	}
	f := cmd.Flags()
	f.StringVar(&since, "since", "", "only since this UTC day (2026-11-29), RFC 3339 time or this long ago (7d)")
	f.StringVar(&workspace, "workspace", "", "only this workspace")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printOverhead(w io.Writer, r overhead.Report) error {
	if len(r.Days) == 0 {
		_, err := fmt.Fprintln(w, "no agent usage and no mull LLM calls in this window")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tDAY (UTC)\tAGENT STEPS\tAGENT PROMPT\tAGENT CACHE HIT %\tAGENT OUTPUT\tAGENT $\tMULL CALLS\tMULL PROMPT\tMULL OUTPUT\tMULL $\tRATIO\tMULL CACHE HIT %")
	line := func(row overhead.Row, day string) {
		ws := row.Workspace
		if ws == "" {
			ws = "(none)"
		}
		agentHit := "-"
		if row.Agent.PromptTokens > 0 {
			agentHit = fmt.Sprintf("%.1f", 100*float64(row.Agent.CacheHitTokens)/float64(row.Agent.PromptTokens))
		}
		steps := fmt.Sprint(row.Agent.Steps)
		if row.Agent.UnpricedSteps > 0 {
			steps += fmt.Sprintf(" (%d unpriced)", row.Agent.UnpricedSteps)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%.6f\t%d\t%d\t%d\t%.6f\t%s\t%s\n", ws, day, steps, row.Agent.PromptTokens,
			agentHit, row.Agent.OutputTokens, usd(row.Agent.CostNanoUSD), row.Mull.Calls, row.Mull.PromptTokens,
			row.Mull.CompletionTokens, usd(row.Mull.CostNanoUSD), percent(row.Ratio, 2), percent(row.MullCacheHitShare, 1))
	}
	for _, row := range r.Days {
		line(row, row.Day)
	}
	if len(r.Workspaces) > 1 || len(r.Days) > 1 {
		for _, row := range r.Workspaces {
			line(row, "all")
		}
		total := r.Total
		total.Workspace = "TOTAL"
		line(total, "all")
	}
	return tw.Flush()
}

// percent shows a share as a percentage, "-" when there is none.
func percent(v *float64, digits int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f%%", digits, 100**v)
}
