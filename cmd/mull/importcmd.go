package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/dshimport"
	"github.com/mullhq/mull/events"
)

func newImportCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Import sessions from agent logs",
	}
	cmd.AddCommand(newImportDSHCmd(g))
	return cmd
}

func newImportDSHCmd(g *globals) *cobra.Command {
	var home string
	var asJSON, dryRun bool
	cmd := &cobra.Command{
		Use:   "dsh [--dsh-home DIR]",
		Short: "Import DeepSeek Harness session logs",
		Long: `Read DSH's session logs (sessions/**/session.jsonl and session.jsonl.zstd under
the DSH home, read-only) and store their events as if the bridge plugin had
sent them: messages, tool results, turn ends, errors, compactions, feedback.

mull remembers how far it read each file, so running it again imports only
what is new, and events the plugin already pushed are not stored twice. A
half-written last line is left for the next run. A corrupt file is reported
with its path and line, the rest of the home is still imported, and the
command exits 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			im := &dshimport.Importer{
				Home: cmp.Or(home, a.cfg.DSH.Home), Store: a.store, DryRun: dryRun,
				Logger: a.log.With("component", "dsh_import"), Progress: progressPrinter(g),
			}
			if !dryRun {
				if im.Ingester, err = importIngester(a); err != nil {
					return err
				}
			}
			sum, err := im.Scan(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				err = printJSON(g, struct {
					Home   string `json:"home"`
					DryRun bool   `json:"dry_run"`
					dshimport.Summary
				}{im.Home, dryRun, sum})
			} else {
				printImportSummary(g, im.Home, sum, dryRun)
			}
			if err == nil && len(sum.Errors) > 0 {
				err = &exitError{code: 1, err: fmt.Errorf("%d session logs could not be read to their end; the rest was imported", len(sum.Errors))}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&home, "dsh-home", "", "DSH's home (default dsh.home: $MULL_DSH_HOME, $DSH_HOME or ~/.dsh)")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	f.BoolVar(&dryRun, "dry-run", false, "read and check the logs, store nothing and remember no position")
	return cmd
}

// importIngester stores imported events through the same ingest service as
// POST /v1/events, so pushed and imported copies of an event meet as one.
func importIngester(a *app) (dshimport.Ingester, error) {
	return dshimport.IngestFunc(func(ctx context.Context, b []events.Event, source string) (int, int, error) {
		r, err := a.ingest.IngestBatch(ctx, b, source)
		return r.Stored, r.Duplicates, err
	}), nil
}

// progressPrinter prints a line to stderr about every 5% of the files.
func progressPrinter(g *globals) func(dshimport.Progress) {
	last := -1
	return func(p dshimport.Progress) {
		step := max(p.FilesTotal/20, 1)
		if p.FilesDone == 0 || p.FilesDone == last || (p.FilesDone%step != 0 && p.FilesDone != p.FilesTotal) {
			return
		}
		last = p.FilesDone
		fmt.Fprintf(g.stderr, "import: files %d/%d, events %d, read %s of %s\n",
			p.FilesDone, p.FilesTotal, p.Events, megabytes(p.BytesDone), megabytes(p.BytesTotal))
	}
}

func printImportSummary(g *globals, home string, s dshimport.Summary, dryRun bool) {
	verb := "imported"
	if dryRun {
		verb = "dry run (nothing stored) of"
	}
	fmt.Fprintf(g.stdout, "%s %s: %d session logs (%d read, %d unchanged, %d waiting for DSH to finish a line)\n",
		verb, home, s.Files, s.Read, s.Unchanged, s.Waiting)
	fmt.Fprintf(g.stdout, "events: %d read", s.Events)
	if !dryRun {
		fmt.Fprintf(g.stdout, ", %d stored, %d duplicates", s.Stored, s.Duplicates)
	}
	if s.Skipped > 0 {
		fmt.Fprintf(g.stdout, ", %d left out (mull would refuse them)", s.Skipped)
	}
	fmt.Fprintln(g.stdout)
	for _, l := range s.LeftOut {
		fmt.Fprintf(g.stdout, "left out: %s\n", l)
	}
	if s.Skipped > len(s.LeftOut) {
		fmt.Fprintf(g.stdout, "left out: %d more (see the log)\n", s.Skipped-len(s.LeftOut))
	}
	for _, e := range s.Errors {
		fmt.Fprintf(g.stdout, "error: %s\n", e)
	}
}

func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
