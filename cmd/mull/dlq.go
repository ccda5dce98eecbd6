package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/dlq"
)

func newDLQCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List, show, retry and purge dead letters",
		Long: `Dead letters are jobs that used their last attempt (River state discarded) or
failed permanently (cancelled with an error). mull keeps them until purged.`,
	}
	cmd.AddCommand(newDLQListCmd(g), newDLQShowCmd(g), newDLQRetryCmd(g), newDLQPurgeCmd(g))
	return cmd
}

func newDLQListCmd(g *globals) *cobra.Command {
	var kind, since string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead letters, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := dlq.Filter{Kind: kind, Limit: limit}
			if since != "" {
				t, err := dlq.ParseSince(since, time.Now())
				if err != nil {
					return usageErr("--since: %v", err)
				}
				f.Since = t
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			letters, err := dlq.List(cmd.Context(), a.client, f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, nonNil(letters))
			}
			if len(letters) == 0 {
				fmt.Fprintln(g.stdout, "no dead letters")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tSTATE\tATTEMPTS\tDIED\tLAST ERROR")
			for _, l := range letters {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d\t%s\t%s\n", l.ID, l.Kind, l.State, l.Attempts, l.MaxAttempts,
					l.DiedAt.Format(time.RFC3339), oneLine(l.LastError, 100))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&kind, "kind", "", "only this job kind")
	f.StringVar(&since, "since", "", "only jobs that died since this RFC 3339 time or this long ago (24h, 7d)")
	f.IntVar(&limit, "limit", 1000, "at most this many")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newDLQShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a dead letter's args and every attempt's error",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return usageErr("job id %q is not a number", args[0])
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			l, err := dlq.Get(cmd.Context(), a.client, id)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, l)
			}
			fmt.Fprintf(g.stdout, "job %d  kind %s  queue %s  state %s  attempts %d/%d\ncreated %s  died %s\nargs %s\n",
				l.ID, l.Kind, l.Queue, l.State, l.Attempts, l.MaxAttempts,
				l.CreatedAt.Format(time.RFC3339), l.DiedAt.Format(time.RFC3339), string(l.Args))
			for _, e := range l.Errors {
				fmt.Fprintf(g.stdout, "attempt %d at %s: %s\n", e.Attempt, e.At.Format(time.RFC3339), e.Error)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newDLQRetryCmd(g *globals) *cobra.Command {
	var kind string
	var all, dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "retry [ID…] [--kind K | --all]",
		Short: "Run dead letters again now",
		Long: `Make dead letters available to run again now, with one more attempt. Select
them by id, by --kind, or --all. A job whose unique key a newer job now holds
is not retried; the newer job's id is printed instead.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			sel := dlq.Selector{Kind: kind, All: all}
			for _, s := range args {
				id, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return usageErr("job id %q is not a number", s)
				}
				sel.IDs = append(sel.IDs, id)
			}
			if len(sel.IDs) == 0 && kind == "" && !all {
				return usageErr("say which dead letters: job ids, --kind K, or --all")
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			res, err := dlq.Retry(cmd.Context(), a.client, sel, dryRun)
			if err != nil {
				return usageErr("%v", err)
			}
			if asJSON {
				return printJSON(g, nonNil(res))
			}
			return printRetry(g, res, dryRun)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kind, "kind", "", "retry every dead letter of this kind")
	f.BoolVar(&all, "all", false, "retry every dead letter")
	f.BoolVar(&dryRun, "dry-run", false, "print what would be retried and change nothing")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printRetry(g *globals, res []dlq.RetryResult, dryRun bool) error {
	verb, n, failed := "retried", 0, 0
	if dryRun {
		verb = "would retry"
	}
	for _, r := range res {
		if r.Retried {
			n++
			fmt.Fprintf(g.stdout, "%s job %d (%s)\n", verb, r.ID, r.Kind)
		} else {
			failed++
			fmt.Fprintf(g.stdout, "not retried job %d (%s): %s\n", r.ID, r.Kind, r.Reason)
		}
	}
	fmt.Fprintf(g.stdout, "%s %d, not retried %d\n", verb, n, failed)
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d dead letters were not retried", failed)}
	}
	return nil
}

func newDLQPurgeCmd(g *globals) *cobra.Command {
	var olderThan, kind string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "purge --older-than 720h",
		Short: "Delete dead letters that died long ago",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan == "" {
				return usageErr("--older-than is required (for example 720h or 30d)")
			}
			d, err := dlq.ParseAge(olderThan)
			if err != nil {
				return usageErr("--older-than: %s", err)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			purged, err := dlq.Purge(cmd.Context(), a.client, d, time.Now(), kind, dryRun)
			verb := "purged"
			if dryRun {
				verb = "would purge"
			}
			for _, l := range purged {
				fmt.Fprintf(g.stdout, "%s job %d (%s, died %s)\n", verb, l.ID, l.Kind, l.DiedAt.Format(time.RFC3339))
			}
			fmt.Fprintf(g.stdout, "%s %d dead letters older than %s\n", verb, len(purged), d)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&olderThan, "older-than", "", "purge dead letters that died longer ago than this (720h, 30d; at most 36500d)")
	f.StringVar(&kind, "kind", "", "only this job kind")
	f.BoolVar(&dryRun, "dry-run", false, "print what would be purged and delete nothing")
	return cmd
}

func printJSON(g *globals, v any) error {
	enc := json.NewEncoder(g.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func oneLine(s string, max int) string {
	s = termSafe(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// termSafe shows control characters as escapes (\x1b, \u202e), keeping
// newlines and tabs: text from DSH logs, LLM calls and memories reaches the
// operator's terminal through these commands, and an escape sequence in it
// must not move the cursor, retitle the window or hide what follows.
func termSafe(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafeRune(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
