package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/overhead"
	"github.com/mullhq/mull/store"
)

func newSessionsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List and show the DSH sessions mull has events from",
		Long: `A session is what mull knows of a DSH session from its events (pushed to
POST /v1/events or imported from DSH's logs): its workspace, its status (open;
ended by a session_end; idle after ingest.idle_timeout without events), its
first and last event times, and how many events of each type it stored.
"show" also says how its import from DSH's logs stands: complete; waiting
(DSH is still writing the log); or incomplete, with the reason naming the
file and byte offset (a corrupt zstd frame skipped, a log cut short).`,
	}
	cmd.AddCommand(newSessionsListCmd(g), newSessionsShowCmd(g), newSessionsRetroCmd(g))
	return cmd
}

func newSessionsListCmd(g *globals) *cobra.Command {
	var f store.SessionFilter
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions, most recently active first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch f.Status {
			case "", store.SessionOpen, store.SessionEnded, store.SessionIdle:
			default:
				return usageErr("--status %q: want open, ended or idle", f.Status)
			}
			if f.Limit < 1 {
				return usageErr("--limit %d: want a positive number", f.Limit)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			list, err := a.store.ListSessions(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, nonNil(list))
			}
			if len(list) == 0 {
				fmt.Fprintln(g.stdout, "no sessions")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tWORKSPACE\tSTATUS\tFIRST EVENT\tLAST EVENT\tEVENTS\tBY TYPE")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.ID, s.Workspace, s.Status,
					s.FirstEventAt.Format(time.RFC3339), s.LastEventAt.Format(time.RFC3339), s.Events, fmtCounts(s.Counts))
			}
			return tw.Flush()
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Workspace, "workspace", "", "only sessions of this workspace (the DSH cwd)")
	fl.StringVar(&f.Status, "status", "", "only sessions in this status (open, ended, idle)")
	fl.IntVar(&f.Limit, "limit", 50, "at most this many (up to 1000)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newSessionsShowCmd(g *globals) *cobra.Command {
	var n int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session and its last events",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 1 {
				return usageErr("--events %d: want a positive number", n)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			d, err := api.LoadSession(cmd.Context(), a.store, llm.NewPricing(a.cfg.LLM), args[0], n)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no session %q", args[0])
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, d)
			}
			printSession(g, d.Session, d.Usage, d.Import, d.LastEvents)
			return nil
		},
	}
	cmd.Flags().IntVar(&n, "events", 20, "show this many of the last events (up to 1000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printSession(g *globals, s store.Session, usage overhead.Agent, imp *store.SessionImport, evs []store.Event) {
	kind := "primary"
	if !s.Primary {
		kind = "subagent"
	}
	fmt.Fprintf(g.stdout, "session %s  %s  status %s\nworkspace %s\n", s.ID, kind, s.Status, s.Workspace)
	if s.Title != "" {
		fmt.Fprintf(g.stdout, "title %s\n", oneLine(s.Title, 200))
	}
	fmt.Fprintf(g.stdout, "first event %s  last event %s\n", s.FirstEventAt.Format(time.RFC3339), s.LastEventAt.Format(time.RFC3339))
	if s.EndedAt != nil {
		fmt.Fprintf(g.stdout, "ended %s (%s)\n", s.EndedAt.Format(time.RFC3339), s.EndReason)
	}
	fmt.Fprintf(g.stdout, "events %d: %s\n", s.Events, fmtCounts(s.Counts))
	printSessionUsage(g.stdout, usage)
	if imp != nil {
		fmt.Fprintf(g.stdout, "import: %s", imp.State)
		if imp.Reason != "" {
			fmt.Fprintf(g.stdout, " (%s)", imp.Reason)
		}
		fmt.Fprintf(g.stdout, ", checked %s\n", imp.CheckedAt.Format(time.RFC3339))
	}
	if len(evs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTIME\tTYPE\tSOURCE\tID\tPAYLOAD")
	for _, e := range evs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Time.Format(time.RFC3339), e.Type, e.Source, e.ID, oneLine(string(e.Payload), 80))
	}
	_ = tw.Flush()
}

// printSessionUsage prints the agent's own usage in a session, when it
// has any (mull report overhead sums it per workspace and day).
func printSessionUsage(w io.Writer, u overhead.Agent) {
	if u.Steps == 0 {
		return
	}
	hit := 100 * float64(u.CacheHitTokens) / float64(max(u.PromptTokens, 1))
	fmt.Fprintf(w, "agent usage: %d steps, %d prompt tokens (%.1f%% cache hits), %d output tokens (%d reasoning), $%.6f",
		u.Steps, u.PromptTokens, hit, u.OutputTokens, u.ReasoningTokens, usd(u.CostNanoUSD))
	if u.UnpricedSteps > 0 {
		fmt.Fprintf(w, " (%d steps of a model llm.prices lacks, not priced)", u.UnpricedSteps)
	}
	fmt.Fprintln(w)
}

// fmtCounts prints counts by type as "error=1 tool_result=12", by type name.
func fmtCounts(c map[string]int64) string {
	parts := make([]string, 0, len(c))
	for _, t := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s=%d", t, c[t]))
	}
	return strings.Join(parts, " ")
}
