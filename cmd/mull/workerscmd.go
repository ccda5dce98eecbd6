package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/store"
)

func newWorkersCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List the worker processes and their heartbeats",
		Long: `Every process that works jobs (mull serve, mull worker) records a heartbeat
every workers.heartbeat_interval in the database it shares with the others.
One whose last beat is older than workers.dead_after is not live: it was
killed or lost its machine, and a live worker's watchdog rescues its running
jobs and forgets it. /healthz is degraded while jobs are available and no
worker is live.`,
	}
	cmd.AddCommand(newWorkersListCmd(g))
	return cmd
}

func newWorkersListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List worker processes: host, pid, queues, started, last beat, live",
		Long: `Lists each worker process with a heartbeat row, the most recent beat first:
its host and pid, the queues it works, when it started, when it last beat
and whether that is within workers.dead_after (live). The same is served at
GET /v1/admin/workers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			ws, err := a.store.ListWorkers(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			rows := store.WorkerStatuses(ws, now, a.cfg.Workers.DeadAfter.D())
			if asJSON {
				return printJSON(g, rows)
			}
			return printWorkers(g, rows, now)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printWorkers(g *globals, rows []store.WorkerStatus, now time.Time) error {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tPID\tQUEUES\tSTARTED\tLAST BEAT\tLIVE")
	live := 0
	for _, r := range rows {
		state := "no (stopped beating)"
		if r.Live {
			state, live = "yes", live+1
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s ago\t%s\n", r.Host, r.PID, strings.Join(r.Queues, ","),
			r.StartedAt.Format(time.RFC3339), now.Sub(r.HeartbeatAt).Round(time.Second), state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "%d workers, %d live\n", len(rows), live)
	return nil
}
