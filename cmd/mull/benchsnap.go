package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/learn/bench"
)

func newBenchCaptureCmd(g *globals) *cobra.Command {
	var r benches.CaptureRequest
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "capture [--id ID] [--session S] [--json]",
		Short: "Capture a reference snapshot of the harness, BEFORE applying the refinement to verify",
		Long: `Capture a read-only snapshot of the merged harness: the global store, or
with --session that session's view (its local entries over the global
ones), with the refinement history it came from and its state_hash.

Capture the reference BEFORE applying the refinement a run is to verify:
'mull bench run REFINEMENT --reference ID' derives the candidate as this
snapshot plus exactly that refinement, and refuses the run when anything
else was committed to these stores since (benchmark:run:candidate-delta).

Without --id the snapshot is named snap_….

Examples:
  mull bench capture --id before-retry-skill
  mull bench capture --session 01J9… --json`,
		Args: cobra.NoArgs,
		RunE: withApp(g, func(ctx context.Context, a *app, _ []string) error {
			snap, err := a.bench.Capture(ctx, r)
			if err != nil {
				return benchErr(err)
			}
			if asJSON {
				return printJSON(g, snap)
			}
			where := "the global store"
			if snap.Session != "" {
				where = "session " + snap.Session
			}
			fmt.Fprintf(g.stdout, "captured %s: %s (%d entries, %d refinements in its history)\n  state_hash %s\n",
				snap.ID, where, countEntries(snap), len(snap.History), snap.StateHash)
			fmt.Fprintf(g.stdout, "now apply the refinement, then: mull bench run REFINEMENT --reference %s\n", snap.ID)
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&r.ID, "id", "", "the snapshot's id (default snap_…)")
	f.StringVar(&r.Session, "session", "", "capture that session's merged view (default: the global store)")
	f.BoolVar(&asJSON, "json", false, "print the snapshot as JSON")
	return cmd
}

func countEntries(s bench.Snapshot) int {
	n := 0
	for _, m := range s.Entries {
		n += len(m)
	}
	return n
}

func newBenchSnapshotsCmd(g *globals) *cobra.Command {
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "snapshots [--limit N] [--json]",
		Short: "List snapshots, newest first: id, kind, what they cover, refinement, state hash",
		Long: `List the snapshots, newest first: the references captured with 'mull bench
capture', the candidates runs derived from them (their refinement and
reference), and the memory runs' two sides (a workspace's digest, or none).
--json prints them whole (entries, digest, history).

Examples:
  mull bench snapshots
  mull bench snapshots --limit 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 1000 {
				return usageErr("--limit %d: want 1 to 1000", limit)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			list, err := a.bench.Snapshots(cmd.Context(), limit)
			if err != nil {
				return benchErr(err)
			}
			if asJSON {
				return printJSON(g, nonNilSlice(list))
			}
			printSnapshots(g.stdout, list)
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many (1 to 1000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printSnapshots(w io.Writer, list []bench.Snapshot) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no snapshots")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tCOVERS\tREFINEMENT\tSTATE_HASH\tCAPTURED")
	for _, s := range list {
		covers := "global"
		switch {
		case s.Kind == bench.MemorySnapshot && s.Digest == "":
			covers = "no memory"
		case s.Kind == bench.MemorySnapshot:
			covers = "digest of " + s.Workspace
		case s.Session != "":
			covers = "session " + s.Session
		}
		ref := s.RefinementID
		if ref != "" && s.Reference != "" {
			ref += " on " + s.Reference
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", oneLine(s.ID, 40), s.Kind, oneLine(covers, 50), ref, shortHash(s.StateHash, 12),
			s.CapturedAt.UTC().Format(time.RFC3339))
	}
	_ = tw.Flush()
}
