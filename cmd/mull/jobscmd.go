package main

import (
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/spf13/cobra"

	"github.com/mullhq/mull/config"
)

func newJobsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "jobs", Short: "Show jobs and the cron schedule"}
	cmd.AddCommand(newJobsListCmd(g), newJobsKindsCmd(g))
	return cmd
}

// liveStates are what "scheduled and running" means by default.
var liveStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}

func newJobsListCmd(g *globals) *cobra.Command {
	var states []string
	var kind string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs that are scheduled or running, and the cron entries",
		Long: `List jobs, newest first: by default those waiting, scheduled, retrying or
running. --state picks others (available, pending, scheduled, retryable,
running, completed, cancelled, discarded). Then the configured cron entries
with their next run, when no --state or --kind is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			want := liveStates
			if len(states) > 0 {
				want = nil
				for _, s := range states {
					st := rivertype.JobState(s)
					if !validState(st) {
						return usageErr("--state %q: want one of %v", s, rivertype.JobStates())
					}
					want = append(want, st)
				}
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			params := river.NewJobListParams().States(want...).OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(limit)
			if kind != "" {
				params = params.Kinds(kind)
			}
			res, err := a.client.JobList(cmd.Context(), params)
			if err != nil {
				return fmt.Errorf("list jobs: %w", err)
			}
			if asJSON {
				return printJSON(g, map[string]any{"jobs": nonNil(res.Jobs), "cron": cronRows(a.builtin, a.cfg.Cron)})
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tQUEUE\tSTATE\tATTEMPT\tSCHEDULED\tARGS")
			for _, j := range res.Jobs {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", j.ID, j.Kind, j.Queue, j.State, j.Attempt, j.MaxAttempts,
					j.ScheduledAt.UTC().Format(time.RFC3339), oneLine(string(j.EncodedArgs), 60))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%d jobs\n", len(res.Jobs))
			if len(states) == 0 && kind == "" {
				printCron(g, a.builtin, a.cfg.Cron)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&states, "state", nil, "only these states (repeat or comma-separate)")
	f.StringVar(&kind, "kind", "", "only this job kind")
	f.IntVar(&limit, "limit", 100, "at most this many jobs")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func validState(s rivertype.JobState) bool {
	for _, v := range rivertype.JobStates() {
		if v == s {
			return true
		}
	}
	return false
}

type cronRow struct {
	Name     string    `json:"name"`
	Kind     string    `json:"kind"`
	Schedule string    `json:"schedule"`
	Next     time.Time `json:"next"`
	// Builtin entries are mull's own (maintenance, the consolidation
	// sweep); the others come from the config's [[cron]].
	Builtin bool `json:"builtin"`
}

func cronRows(builtin, configured []config.Cron) []cronRow {
	out := []cronRow{}
	for i, e := range append(slices.Clone(builtin), configured...) {
		s, err := config.ParseCron(e.Schedule)
		if err != nil {
			continue // validated at load
		}
		out = append(out, cronRow{Name: e.Name, Kind: e.Kind, Schedule: e.Schedule, Next: s.Next(time.Now()).UTC(), Builtin: i < len(builtin)})
	}
	return out
}

func printCron(g *globals, builtin, configured []config.Cron) {
	rows := cronRows(builtin, configured)
	fmt.Fprintln(g.stdout, "\nCRON (enqueued by the elected leader)")
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSCHEDULE\tNEXT (UTC)\tFROM")
	for _, r := range rows {
		from := "config"
		if r.Builtin {
			from = "built-in"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Kind, r.Schedule, r.Next.Format(time.RFC3339), from)
	}
	_ = tw.Flush()
}

func newJobsKindsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "kinds",
		Short: "List job kinds with their queue, attempts, backoff, timeout and priority",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tQUEUE\tMAX ATTEMPTS\tBACKOFF\tTIMEOUT\tPRIORITY")
			for _, s := range a.reg.Specs() {
				backoff := "attempt⁴ s"
				if s.Backoff > 0 {
					backoff = s.Backoff.String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\n", s.Kind, s.Queue, s.MaxAttempts, backoff, s.Timeout, s.Priority)
			}
			return tw.Flush()
		},
	}
}
