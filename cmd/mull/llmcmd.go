package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/dlq"
	"github.com/mullhq/mull/store"
)

func newLLMCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "llm",
		Short: "Show LLM calls, their tokens and cost",
		Long: `Every call mull makes to the model is recorded: job id and kind, workspace,
model, tokens by class (prompt cache hit and miss, completion), cost, latency,
outcome and error class. A call is recorded as "running" when its request goes
out and finished when it returns; one whose worker died before it returned
is marked "lost" (worker_died) by the budget sweep once past llm.call_timeout
plus a minute: DeepSeek may have billed it, but its usage is unknown.`,
	}
	cmd.AddCommand(newLLMCallsCmd(g), newLLMUsageCmd(g))
	return cmd
}

// callFilterFlags are the filters shared by `llm calls` and `llm usage`.
type callFilterFlags struct {
	job             int64
	kind, workspace string
	since, until    string
	limit           int
}

func (c *callFilterFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Int64Var(&c.job, "job", 0, "only calls of this job id")
	f.StringVar(&c.kind, "kind", "", "only calls of this job kind")
	f.StringVar(&c.workspace, "workspace", "", "only calls for this workspace")
	f.StringVar(&c.since, "since", "", "only calls since this RFC 3339 time or this long ago (24h, 7d)")
	f.StringVar(&c.until, "until", "", "only calls before this RFC 3339 time or this long ago")
}

func (c *callFilterFlags) filter(now time.Time) (store.LLMCallFilter, error) {
	f := store.LLMCallFilter{JobID: c.job, Kind: c.kind, Workspace: c.workspace, Limit: c.limit}
	var err error
	if c.since != "" {
		if f.Since, err = dlq.ParseSince(c.since, now); err != nil {
			return f, usageErr("--since: %v", err)
		}
	}
	if c.until != "" {
		if f.Until, err = dlq.ParseSince(c.until, now); err != nil {
			return f, usageErr("--until: %v", err)
		}
	}
	return f, nil
}

func newLLMCallsCmd(g *globals) *cobra.Command {
	var cf callFilterFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "calls",
		Short: "List LLM calls, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := cf.filter(time.Now())
			if err != nil {
				return err
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			calls, err := a.store.ListLLMCalls(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, nonNil(calls))
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tJOB\tKIND\tMODEL\tPROMPT\tCACHE HIT\tOUTPUT\tCOST $\tLATENCY\tOUTCOME")
			for _, c := range calls {
				outcome := c.Outcome
				if c.ErrorReason != "" {
					outcome += " (" + c.ErrorReason + ")"
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%.6f\t%s\t%s\n", c.CreatedAt.Format(time.RFC3339), c.JobID, c.Kind,
					c.Model, c.PromptTokens, c.CacheHitTokens, c.CompletionTokens, usd(c.CostNanoUSD), latency(c), outcome)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%d calls\n", len(calls))
			return nil
		},
	}
	cf.add(cmd)
	cmd.Flags().IntVar(&cf.limit, "limit", 100, "at most this many")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(newLLMCallShowCmd(g))
	return cmd
}

func newLLMCallShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one LLM call with the messages it sent and the answer",
		Long: `Shows one call record (ids are in 'mull llm calls --json'), the request
messages it kept and the model's answer: what the model read and wrote,
kept for llm.keep_prompts after the call (default 7 days; "0" keeps none).
Both pass the trust gate's credential redaction before they are stored, so
a secret in a session's tool output shows as [redacted:TYPE]. The same is
served at
GET /v1/admin/llm/calls/ID.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			c, err := a.store.GetLLMCall(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, c.Detail())
			}
			return printLLMCall(g, c, a.cfg.LLM.KeepPrompts)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printLLMCall(g *globals, c store.LLMCall, keep string) error {
	w := g.stdout
	fmt.Fprintf(w, "call:      %s\njob:       %d (%s)\nworkspace: %s\nmodel:     %s\ntime:      %s\n",
		c.ID, c.JobID, c.Kind, c.Workspace, c.Model, c.CreatedAt.Format(time.RFC3339))
	fmt.Fprintf(w, "tokens:    prompt %d (cache hit %d, miss %d), output %d\ncost:      $%.6f\nlatency:   %s\n",
		c.PromptTokens, c.CacheHitTokens, c.CacheMissTokens, c.CompletionTokens, usd(c.CostNanoUSD), latency(c))
	outcome := c.Outcome
	if c.ErrorReason != "" {
		outcome += " (" + c.ErrorReason + ")"
	}
	fmt.Fprintf(w, "outcome:   %s\n", outcome)
	if c.Error != "" {
		fmt.Fprintf(w, "error:     %s\n", c.Error)
	}
	if len(c.Messages) == 0 {
		fmt.Fprintf(w, "messages:  not kept (llm.keep_prompts = %q: none kept, or pruned since)\n", keep)
	}
	for i, m := range c.Messages {
		fmt.Fprintf(w, "\n--- message %d: %s (%d chars)\n%s\n", i+1, termSafe(m.Role), len([]rune(m.Content)), termSafe(m.Content))
	}
	if c.Response == nil {
		fmt.Fprintf(w, "answer:    not kept (llm.keep_prompts = %q: none kept, or pruned since, or no answer came)\n", keep)
		return nil
	}
	if r := c.Response.Reasoning; r != "" {
		fmt.Fprintf(w, "\n--- answer: reasoning (%d chars)\n%s\n", len([]rune(r)), termSafe(r))
	}
	fmt.Fprintf(w, "\n--- answer: content (%d chars)\n%s\n", len([]rune(c.Response.Content)), termSafe(c.Response.Content))
	return nil
}

func newLLMUsageCmd(g *globals) *cobra.Command {
	var cf callFilterFlags
	var by string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Sum LLM calls' tokens and cost by job, workspace, kind or day",
		Long: `Sums the recorded calls' tokens and cost. CALLS counts every call, running
ones included; FAILED counts those that ended in an error or were lost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch by {
			case "job", "workspace", "kind", "day":
			default:
				return usageErr("--by %q: want job, workspace, kind or day", by)
			}
			f, err := cf.filter(time.Now())
			if err != nil {
				return err
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			rows, err := a.store.SumLLMCalls(cmd.Context(), by, f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, nonNil(rows))
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "%s\tCALLS\tFAILED\tPROMPT\tCACHE HIT %%\tOUTPUT\tCOST $\n", map[string]string{
				"job": "JOB", "workspace": "WORKSPACE", "kind": "KIND", "day": "DAY (UTC)"}[by])
			for _, r := range rows {
				share := 0.0
				if r.PromptTokens > 0 {
					share = 100 * float64(r.CacheHitTokens) / float64(r.PromptTokens)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%d\t%.6f\n", r.Group, r.Calls, r.Failed, r.PromptTokens, share,
					r.CompletionTokens, usd(r.CostNanoUSD))
			}
			return tw.Flush()
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&by, "by", "day", "group by job, workspace, kind or day")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func usd(nano int64) float64 { return float64(nano) / 1e9 }

// latency is a call's latency, or "-" while it runs or once it is lost:
// it never returned.
func latency(c store.LLMCall) string {
	if c.Outcome == store.LLMCallRunning || c.Outcome == store.LLMCallLost {
		return "-"
	}
	return (time.Duration(c.LatencyMS) * time.Millisecond).String()
}
