package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/learn/bench"
)

func newBenchShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show RUN [--json]",
		Short: "Show a run: the case × side × iteration grid of scores, and the decision with its reasons",
		Long: `Show a run: what it compares, its progress (cells done of all, failed,
tokens and cost of its LLM calls), a grid of every cell's score by case,
side and iteration ("failed (reason)" for a cell with no score, "…" for one
not yet recorded), then the decision: ACCEPTED or REJECTED, the overall
means, each case's means and delta (candidate − reference), the failed
cells, the rules that rejected it, and the judge's feedback.

--json prints the whole record, each cell's evidence (and a DSH cell's
session log) included.

Examples:
  mull bench show bench_3f9a…
  mull bench show bench_3f9a… --json | jq '.cells[0].evidence'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			run, err := a.bench.Run(cmd.Context(), args[0])
			if err != nil {
				return benchErr(err)
			}
			if asJSON {
				run.Cells = nonNilSlice(run.Cells)
				return printJSON(g, run)
			}
			printBenchRun(g.stdout, run)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON, with every cell's evidence")
	return cmd
}

// printBenchRun prints a run: header, progress, grid, decision.
func printBenchRun(w io.Writer, r benches.Run) {
	what := "memory A/B of set " + setName(r.Set) + " in " + r.Workspace
	if r.Kind != "memory" {
		what = "refinement " + r.RefinementID
	}
	fmt.Fprintf(w, "run %s: %s\n  reference %s, candidate %s; executor %s; %d runs; %s\n",
		r.ID, what, r.Reference, r.Candidate, r.Executor, r.Runs, r.Status)
	fmt.Fprintf(w, "  %s\n\n", ProgressLine(r))
	printBenchGrid(w, r)
	if r.Decision == nil {
		fmt.Fprintf(w, "\nno decision yet (%s)\n", r.Status)
		return
	}
	fmt.Fprintln(w)
	printBenchDecision(w, r, *r.Decision)
}

type benchCellKey struct {
	caseID    string
	side      bench.Side
	iteration int
}

// printBenchGrid prints one row per case and side, one column per iteration.
func printBenchGrid(w io.Writer, r benches.Run) {
	cells := map[benchCellKey]bench.Cell{}
	base := 1
	for _, c := range r.Cells {
		cells[benchCellKey{c.CaseID, c.Side, c.Iteration}] = c
		if c.Iteration == 0 {
			base = 0
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"CASE", "SIDE"}
	for i := range r.Runs {
		head = append(head, "#"+strconv.Itoa(i+1))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, id := range r.CaseIDs {
		for _, side := range []bench.Side{bench.Reference, bench.Candidate} {
			row := []string{oneLine(id, 50), string(side)}
			for i := range r.Runs {
				c, ok := cells[benchCellKey{id, side, base + i}]
				row = append(row, benchCellText(c, ok))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	_ = tw.Flush()
}

// benchCellText is a grid cell: its score, "failed (reason)" (never 0), or "…"
// when not yet recorded.
func benchCellText(c bench.Cell, ok bool) string {
	switch {
	case !ok:
		return "…"
	case c.Status == bench.CellFailed || c.Score == nil:
		return "failed (" + string(c.FailureReason) + ")"
	}
	return strconv.FormatFloat(*c.Score, 'f', -1, 64)
}

// mean prints a mean, or "-" when a side had no usable cell.
func benchMean(v *float64) string {
	if v == nil {
		return "-"
	}
	return round2(*v)
}

// round2 prints a score or mean with at most two decimals.
func round2(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

func benchDelta(v *float64) string {
	if v == nil {
		return "-"
	}
	if *v >= 0 {
		return "+" + round2(*v)
	}
	return round2(*v)
}

func printBenchDecision(w io.Writer, r benches.Run, d bench.Decision) {
	fmt.Fprintf(w, "decision: %s\n", d.Status)
	var overall *float64
	if d.ReferenceOverall != nil && d.CandidateOverall != nil {
		v := *d.CandidateOverall - *d.ReferenceOverall
		overall = &v
	}
	passes := "does not reach it"
	if d.CandidatePasses {
		passes = "candidate reaches it"
	}
	fmt.Fprintf(w, "  overall: reference %s, candidate %s (delta %s); pass threshold %s: %s (reported only)\n",
		benchMean(d.ReferenceOverall), benchMean(d.CandidateOverall), benchDelta(overall), strconv.FormatFloat(d.PassThreshold, 'f', -1, 64), passes)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CASE\tREFERENCE\tCANDIDATE\tDELTA\t")
	ids := slices.Clone(r.CaseIDs)
	for id := range d.PerCase {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		m, ok := d.PerCase[id]
		if !ok {
			continue
		}
		mark := ""
		if slices.Contains(d.RegressionCases, id) {
			mark = "regressed"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", oneLine(id, 50), benchMean(m.Reference), benchMean(m.Candidate), benchDelta(m.Delta), mark)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "  failed cells: %d (reference %d, candidate %d)\n", d.FailedCells, d.FailedReference, d.FailedCandidate)
	if len(d.Reasons) > 0 {
		fmt.Fprintln(w, "  rejected because:")
		for _, reason := range d.Reasons {
			fmt.Fprintf(w, "    - %s\n", reason)
		}
	}
	if len(d.Feedback) > 0 {
		fmt.Fprintln(w, "  feedback:")
		for _, f := range d.Feedback {
			fmt.Fprintf(w, "    - %s\n", oneLine(f, 200))
		}
	}
}

func newBenchListCmd(g *globals) *cobra.Command {
	var f benches.RunFilter
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--kind refinement|memory] [--status S] [--limit N] [--json]",
		Short: "List runs, newest first: id, kind, status, verdict, what they compare, progress",
		Long: `List the benchmark runs, newest first, without their cells: kind
(refinement or memory), status (running, decided, failed, cancelled), the
verdict once decided, the refinement or the set, and the cells done.

Examples:
  mull bench list
  mull bench list --kind memory --status decided --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if field, problem := api.CheckRunFilter(f); field != "" {
				return usageErr("--%s: %s", field, problem)
			}
			if f.Limit < 1 || f.Limit > 1000 {
				return usageErr("--limit %d: want 1 to 1000", f.Limit)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			list, err := a.bench.Runs(cmd.Context(), f)
			if err != nil {
				return benchErr(err)
			}
			if asJSON {
				return printJSON(g, nonNilSlice(list))
			}
			printBenchRuns(g.stdout, list)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Kind, "kind", "", "only refinement or memory runs")
	fl.StringVar(&f.Status, "status", "", "only running, decided, failed or cancelled runs")
	fl.IntVar(&f.Limit, "limit", 50, "at most this many (1 to 1000)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printBenchRuns(w io.Writer, list []benches.Run) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no runs")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tSTATUS\tVERDICT\tOF\tCELLS\tCREATED")
	for _, r := range list {
		verdict := "-"
		if r.Decision != nil {
			verdict = string(r.Decision.Status)
		}
		of := r.RefinementID
		if r.Kind == "memory" {
			of = "set " + setName(r.Set)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", r.ID, r.Kind, r.Status, verdict, oneLine(of, 40), r.Done, r.Total,
			r.Created.UTC().Format(time.RFC3339))
	}
	_ = tw.Flush()
}
