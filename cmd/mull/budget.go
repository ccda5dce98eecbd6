package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
)

func newBudgetCmd(g *globals) *cobra.Command {
	var day string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "budget [--day YYYY-MM-DD] [--json]",
		Short: "Show the daily token budgets; set and unset limits at runtime",
		Long: `Show every budget key's limit, reserved, spent and remaining tokens, calls,
cache-hit share and cost for one budget day (today in the budget zone by
default). Keys are global, workspace:<path>, kind:<job kind>, and workspace:*,
the limit of every workspace without its own.

'mull budget set' and 'mull budget unset' change a limit for every running mull
at once, from its next reservation, without a restart.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if day != "" {
				if _, err := time.Parse(time.DateOnly, day); err != nil {
					return usageErr("--day: want YYYY-MM-DD, got %q", day)
				}
			}
			a, l, err := openLedger(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.close()
			rep, err := l.ReportDay(cmd.Context(), day)
			if err != nil {
				return err
			}
			if asJSON {
				rep.Keys = nonNil(rep.Keys)
				return printJSON(g, rep)
			}
			return printBudget(g, rep)
		},
	}
	cmd.Flags().StringVar(&day, "day", "", "budget day to show, YYYY-MM-DD in the budget zone (default today)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(newBudgetSetCmd(g), newBudgetUnsetCmd(g))
	return cmd
}

func newBudgetSetCmd(g *globals) *cobra.Command {
	var usd float64
	cmd := &cobra.Command{
		Use:   "set KEY TOKENS [--usd X]",
		Short: "Override a key's daily limit at runtime",
		Long: `Override a key's daily token limit (0: no token limit) for every running mull,
from its next reservation. The override survives restarts and config changes
until 'mull budget unset KEY'. Without --usd the key keeps its money limit.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			if err := config.ValidateBudgetKey(key); err != nil {
				return usageErr("%v", err)
			}
			tokens, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil || tokens < 0 {
				return usageErr("TOKENS: want a whole number of tokens per day, 0 for no token limit; got %q", args[1])
			}
			if usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) {
				return usageErr("--usd: want a daily amount in USD ≥ 0, 0 for no money limit; got %g", usd)
			}
			a, l, err := openLedger(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.close()
			if !cmd.Flags().Changed("usd") {
				if own, ok := keyReport(cmd.Context(), l, key); ok && own.LimitKey == "" {
					usd = own.LimitUSD
				}
			}
			if err := l.SetLimit(cmd.Context(), key, tokens, usd); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%s: %s per day, set by operator; in effect from the next reservation\n", key, limitText(tokens, usd))
			return nil
		},
	}
	cmd.Flags().Float64Var(&usd, "usd", 0, "daily money limit in USD (0: none; default: keep the key's current one)")
	return cmd
}

func newBudgetUnsetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "unset KEY",
		Short: "Remove an operator's limit: the key goes back to its config limit",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			if err := config.ValidateBudgetKey(key); err != nil {
				return usageErr("%v", err)
			}
			a, l, err := openLedger(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.close()
			if err := l.UnsetLimit(cmd.Context(), key); err != nil {
				return err
			}
			now, ok := keyReport(cmd.Context(), l, key)
			switch {
			case !ok || now.Source == "":
				fmt.Fprintf(g.stdout, "%s: no limit\n", key)
			case now.LimitKey != "":
				fmt.Fprintf(g.stdout, "%s: the %s limit, %s per day\n", key, now.LimitKey, limitText(now.LimitTokens, now.LimitUSD))
			default:
				fmt.Fprintf(g.stdout, "%s: back to the %s limit, %s per day\n", key, now.Source, limitText(now.LimitTokens, now.LimitUSD))
			}
			return nil
		},
	}
}

// openLedger opens the app on a migrated database and its budget ledger.
func openLedger(ctx context.Context, g *globals) (*app, *budget.Ledger, error) {
	a, err := g.open(ctx, manage)
	if err != nil {
		return nil, nil, err
	}
	return a, a.ledger, nil
}

// keyReport is one key's row today, if it has a limit or usage.
func keyReport(ctx context.Context, l *budget.Ledger, key string) (budget.KeyReport, bool) {
	rows, err := l.Report(ctx, "")
	if err != nil {
		return budget.KeyReport{}, false
	}
	for _, r := range rows {
		if r.Key == key {
			return r, true
		}
	}
	return budget.KeyReport{}, false
}

func printBudget(g *globals, rep budget.DayReport) error {
	fmt.Fprintf(g.stdout, "budget day %s (%s), resets %s\n", rep.Day, rep.Zone, rep.ResetAt.Format(time.RFC3339))
	if len(rep.Keys) == 0 {
		fmt.Fprintln(g.stdout, "no limits and no usage")
		return nil
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tLIMIT\tRESERVED\tSPENT\tREMAINING\tCALLS\tCACHE-HIT%\tCOST\tSOURCE")
	for _, k := range rep.Keys {
		limit, remaining := "-", "-"
		if k.LimitTokens > 0 {
			limit, remaining = strconv.FormatInt(k.LimitTokens, 10), strconv.FormatInt(k.RemainingTokens, 10)
		}
		cost := fmt.Sprintf("$%.4f", k.CostUSD)
		if k.LimitUSD > 0 {
			cost += fmt.Sprintf(" of $%.2f", k.LimitUSD)
		}
		source := k.Source
		switch {
		case source == "":
			source = "-"
		case k.LimitKey != "":
			source += " (" + k.LimitKey + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%.1f%%\t%s\t%s\n", k.Key, limit, k.ReservedTokens, k.SpentTokens,
			remaining, k.Calls, 100*k.CacheHitShare, cost, source)
	}
	return tw.Flush()
}

func limitText(tokens int64, usd float64) string {
	s := "no token limit"
	if tokens > 0 {
		s = strconv.FormatInt(tokens, 10) + " tokens"
	}
	if usd > 0 {
		s += fmt.Sprintf(" and $%.2f", usd)
	}
	return s
}
