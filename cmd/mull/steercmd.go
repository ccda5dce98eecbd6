package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/jobs/retroerror"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/memstatus"
	"github.com/mullhq/mull/store"
)

// newMemoryStatusCmd is `mull memory status`: memory_status from the CLI.
func newMemoryStatusCmd(g *globals) *cobra.Command {
	var ws string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--workspace W]",
		Short: "Show a workspace's libraries, the queue and its budget (the agent's memory_status)",
		Long: `Print what the agent's memory_status tool and the /mull slash command show: the
workspace's library and the global one, their memories by kind and state (live,
superseded, quarantined, deprecated, invalidated), quarantined and redacted
counts, the last retro, consolidation and failed LLM call; the job queue (every
workspace's jobs) and whether learning is paused; the workspace's budget today.
Read and write errors are counted by the serving process ('mull serve'), so
GET /v1/memory/status has them and this command does not.`,
		Args: cobra.NoArgs,
		RunE: withApp(g, func(ctx context.Context, a *app, _ []string) error {
			st, err := memstatus.Read(ctx, memstatus.Deps{Store: a.store, Memories: a.memories, Client: a.client, Budget: a.ledger}, ws)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g, st)
			}
			printStatus(g.stdout, st)
			return nil
		}),
	}
	cmd.Flags().StringVar(&ws, "workspace", "", "the workspace (the DSH cwd); empty: the global library alone")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (GET /v1/memory/status's shape)")
	return cmd
}

func printStatus(w io.Writer, st memstatus.Status) {
	fmt.Fprintf(w, "scope: %s\n", st.Scope)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LIBRARY\tKIND\tLIVE\tSUPERSEDED\tQUARANTINED\tDEPRECATED\tINVALIDATED")
	for _, l := range st.Libraries {
		kinds := make([]string, 0, len(l.Counts))
		for k := range l.Counts {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		name := l.Name
		if !l.Read {
			name += " (not read)"
		}
		for _, k := range append(kinds, "all") {
			c := l.Totals
			if k != "all" {
				c = l.Counts[k]
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", name, k, c[store.CountLive], c[store.CountSuperseded],
				c[store.CountQuarantined], c[store.CountDeprecated], c[store.CountInvalidated])
		}
	}
	tw.Flush()
	for _, l := range st.Libraries {
		fmt.Fprintf(w, "%s: %d redacted; last retro %s, consolidation %s, failed LLM call %s\n", l.Name, l.Redacted,
			timePtrOrDash(l.LastRetroAt), timePtrOrDash(l.LastConsolidationAt), timePtrOrDash(l.LastErrorAt))
	}
	q := st.Queue
	fmt.Fprintf(w, "queue (%s): %d available, %d scheduled, %d running, %d retryable, %d dead\n", q.Of,
		q.Available, q.Scheduled, q.Running, q.Retryable, q.Dead)
	if q.Paused {
		fmt.Fprintf(w, "learning is PAUSED (queue llm): %s\n", cmpOr(q.PausedReason, "by an operator; 'mull queues resume llm'"))
	}
	if b := st.Budget; b != nil {
		limit := "no limit"
		if b.Limit > 0 {
			limit = fmt.Sprintf("%d remaining of %d", b.Remaining, b.Limit)
		}
		fmt.Fprintf(w, "budget %s today: %d tokens spent, %d held; %s (resets %s)\n", b.Key, b.Spent, b.Reserved, limit,
			b.ResetAt.UTC().Format(time.RFC3339))
	}
}

func timePtrOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// forgetByKeywords is `mull memory forget --keywords`: the /forget slash
// command's dry run, then, on the person's yes (or --yes), its confirm.
func forgetByKeywords(ctx context.Context, g *globals, a *app, ws, keywords string, yes bool) error {
	p, err := a.memories.ForgetPlanFor(ctx, ws, keywords)
	if err != nil {
		return flagError(err)
	}
	if p.Count == 0 {
		fmt.Fprintf(g.stdout, "no live memory of %s matches %q\n", ws, keywords)
		return nil
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLIBRARY\tKIND\tTEXT")
	for _, m := range p.Matches {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.ID, m.Library, m.Kind, oneLine(m.Text, 80))
	}
	tw.Flush()
	for _, m := range p.Kept {
		fmt.Fprintf(g.stdout, "kept lesson %d: a structured lesson changes by 'mull lessons deprecate|remove'\n", m.ID)
	}
	if !yes {
		if !stdinIsTerminal() {
			fmt.Fprintf(g.stdout, "nothing forgotten: run again with --yes to forget these %d\n", p.Count)
			return nil
		}
		fmt.Fprintf(g.stdout, "forget these %d? They are kept, marked invalid from now on. [y/N] ", p.Count)
		line, _ := bufio.NewReader(importStdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintln(g.stdout, "nothing forgotten")
			return nil
		}
	}
	ids, err := a.memories.Forget(ctx, ws, keywords, p.Token)
	var stale *memories.StaleForgetError
	if errors.As(err, &stale) {
		return &exitError{code: 1, err: fmt.Errorf("%w; nothing forgotten", err)}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "forgot %d memories (reason %q): %v\n", len(ids), "forget: "+memory.OneLine(keywords), ids)
	return nil
}

// newMemoryPromoteCmd is `mull memory promote`: the /promote slash command.
func newMemoryPromoteCmd(g *globals) *cobra.Command {
	var ws string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "promote --workspace W [ID…]",
		Short: "Copy workspace memories to the global library by hand",
		Long: `Copy the named memories of workspace W to the global library, under the
promotion rules: never one from an external source (web, tool, doc), never a
quarantined or invalidated one, never what the global library has or had
(a forgotten copy stays forgotten), never from a workspace in a temporary
directory. Without IDs, the best candidates of the automatic promotion (at most
3, score at least 10). Structured lessons move with 'mull lessons move'.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ids := make([]int64, len(args))
			for i, s := range args {
				id, err := memoryID(s)
				if err != nil {
					return err
				}
				ids[i] = id
			}
			return withApp(g, func(ctx context.Context, a *app, _ []string) error {
				p, err := a.memories.PromoteByHand(ctx, ws, ids, []string{os.TempDir()})
				if err != nil {
					return flagError(err)
				}
				if asJSON {
					return printJSON(g, p)
				}
				for _, pr := range p.Promoted {
					fmt.Fprintf(g.stdout, "promoted memory %d to the global library as memory %d\n", pr.ID, pr.GlobalID)
				}
				for _, rf := range p.Refused {
					fmt.Fprintf(g.stdout, "refused memory %d: %s\n", rf.ID, rf.Reason)
				}
				if p.Message != "" {
					fmt.Fprintln(g.stdout, p.Message)
				}
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().StringVar(&ws, "workspace", "", "the workspace whose memories go (the DSH cwd); required")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (POST /v1/memories/promote's shape)")
	return cmd
}

// newSessionsRetroCmd is `mull sessions retro ID`: the /retro slash
// command, through the automatic retro's guards. 'mull retro run' is the
// operator's unguarded run that follows the job.
func newSessionsRetroCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "retro ID",
		Short: "Queue a session's retro now, as the /retro slash command does",
		Long: `Queue a retro of session ID now, through the automatic retro's guards: nothing
for a subagent's session or one with nothing new since its last retro, the
waiting retro when one is queued already, no sooner than retro.error_min_gap
after the session's last retro, and after the budget's reset when the
workspace's budget is spent. 'mull retro run ID' runs one regardless and
follows it.`,
		Args: cobra.ExactArgs(1),
		RunE: withApp(g, func(ctx context.Context, a *app, args []string) error {
			sess, err := a.store.GetSession(ctx, args[0])
			if errors.Is(err, store.ErrNotFound) {
				return &exitError{code: 2, err: fmt.Errorf("no session %q: 'mull sessions list' shows the sessions mull has events from", args[0])}
			}
			if err != nil {
				return err
			}
			var notBefore time.Time
			if k, reset, spent, err := a.ledger.Exhausted(ctx, sess.Workspace, retrosession.Args{}.Kind()); err != nil {
				return err
			} else if spent {
				notBefore = reset
				fmt.Fprintf(g.stdout, "the budget %s is spent for today: the retro waits for the reset\n", k.Key)
			}
			r := a.cfg.Retro
			h := &retroerror.Hook{Store: a.store, Logger: a.log, Rules: retroerror.Rules{
				Debounce: r.ErrorDelay.D(), MinGap: r.ErrorMinGap.D(), MaxPerSession: r.ErrorMaxPerSession}, Workspaces: a.workspaces}
			var asked retroerror.Asked
			err = a.store.InTx(ctx, func(tx *sql.Tx) (err error) {
				asked, err = h.Now(ctx, tx, a.client, sess, notBefore)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, asked.Message)
			return nil
		}),
	}
}
