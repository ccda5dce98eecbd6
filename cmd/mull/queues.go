package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/spf13/cobra"

	"github.com/mullhq/mull/llm"
)

func newQueuesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List, pause and resume queues",
		Long: `Queues group jobs; each worker process works the queues configured in
[workers.queues]. A paused queue keeps its jobs but no worker fetches them.
mull pauses an LLM queue by itself when DeepSeek answers 402 (insufficient
balance); top up the account, then resume it. Started without an API key
(DEEPSEEK_API_KEY), mull pauses the llm queue too ("no DEEPSEEK_API_KEY"):
its jobs wait without using an attempt; a restart with the key resumes it.`,
	}
	cmd.AddCommand(newQueuesListCmd(g), newQueuePauseCmd(g, true), newQueuePauseCmd(g, false))
	return cmd
}

func newQueuesListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List queues, whether paused, and their jobs by state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			res, err := a.client.QueueList(cmd.Context(), river.NewQueueListParams().First(1000))
			if err != nil {
				return fmt.Errorf("list queues: %w", err)
			}
			counts, err := a.store.JobCounts(cmd.Context())
			if err != nil {
				return err
			}
			byQueue := map[string]map[string]int64{}
			for _, c := range counts {
				if byQueue[c.Queue] == nil {
					byQueue[c.Queue] = map[string]int64{}
				}
				byQueue[c.Queue][c.State] += c.N
			}
			type row struct {
				Name     string           `json:"name"`
				Paused   bool             `json:"paused"`
				PausedAt *time.Time       `json:"paused_at,omitempty"`
				Reason   string           `json:"paused_reason,omitempty"`
				Workers  int              `json:"workers_configured"`
				Jobs     map[string]int64 `json:"jobs"`
			}
			var rows []row
			for _, q := range res.Queues {
				reason := ""
				if q.PausedAt != nil {
					reason = llm.PausedReason(q)
				}
				rows = append(rows, row{Name: q.Name, Paused: q.PausedAt != nil, PausedAt: q.PausedAt, Reason: reason,
					Workers: a.cfg.Workers.Queues[q.Name], Jobs: nonNilMap(byQueue[q.Name])})
			}
			if asJSON {
				return printJSON(g, nonNil(rows))
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "QUEUE\tSTATE\tWORKERS\tAVAILABLE\tRUNNING\tSCHEDULED\tRETRYABLE\tDISCARDED")
			for _, r := range rows {
				state := "active"
				if r.Paused {
					state = "PAUSED since " + r.PausedAt.UTC().Format(time.RFC3339)
					if r.Reason != "" {
						state += " (" + r.Reason + ")"
					}
				}
				j := r.Jobs
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", r.Name, state, r.Workers,
					j[string(rivertype.JobStateAvailable)], j[string(rivertype.JobStateRunning)], j[string(rivertype.JobStateScheduled)],
					j[string(rivertype.JobStateRetryable)], j[string(rivertype.JobStateDiscarded)])
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newQueuePauseCmd(g *globals, pause bool) *cobra.Command {
	verb, short := "resume", "Resume queues: workers fetch their jobs again"
	if pause {
		verb, short = "pause", "Pause queues: their jobs stay, no worker fetches them"
	}
	var all bool
	cmd := &cobra.Command{
		Use:   verb + " QUEUE… | --all",
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !all {
				return usageErr("name the queues to %s, or --all", verb)
			}
			if len(args) > 0 && all {
				return usageErr("name queues or give --all, not both")
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			if all {
				args = []string{"*"}
			}
			for _, q := range args {
				if pause {
					err = a.client.QueuePause(cmd.Context(), q, nil)
				} else if err = a.client.QueueResume(cmd.Context(), q, nil); err == nil && q != "*" {
					// The pause's reason goes with it.
					md := []byte(`{"` + llm.PausedReasonKey + `":""}`)
					_, err = a.client.QueueUpdate(cmd.Context(), q, &river.QueueUpdateParams{Metadata: md})
				}
				if err != nil {
					return fmt.Errorf("%s queue %s: %w", verb, q, err)
				}
				if q == "*" {
					q = "all queues"
				}
				fmt.Fprintf(g.stdout, "%sd %s\n", verb, q)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, verb+" every queue")
	return cmd
}

func nonNilMap(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}
