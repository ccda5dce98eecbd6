package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/learn/bench"
)

func newBenchCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "A/B benchmarks: frozen cases run with and without a refinement, or with and without memory",
		Long: `A benchmark decides, by code and not by a model, whether a change helped
(seed 004's benchmark). Frozen cases run on two sides: a reference and a
candidate. Each case × side × iteration is a cell: a retried bench_cell job
that runs the case (an executor call, or a real DSH headless session with
bench.executor = dsh) and has a judge score it 0..100 against the case's
rubric. One bench_decide job joins the cells and decides:

  REJECTED when either side has no usable cell, when more candidate cells
  failed than bench.max_failed_cells (0), when the candidate's overall mean
  is below the reference's minus bench.regression_tolerance (0), or when
  any one case's mean regresses by the same rule; ACCEPTED otherwise.

A failed cell has no score (null, never 0). bench.pass_threshold (60) is
reported only. A run never refines, rolls back or writes harness state.

Two kinds of run:
  mull bench run REFINEMENT --reference SNAP   the candidate is the reference
      snapshot plus exactly that refinement (capture the reference with
      'mull bench capture' BEFORE applying the refinement); any other
      change since is refused before a cell runs (benchmark:run:candidate-delta).
  mull bench memory --cases SET --workspace W   the candidate is shown the
      workspace's memory digest, the reference none: does the memory help?

A worker ('mull serve' or 'mull worker') must be running on the same
database. The same is on the admin API under /v1/admin/bench/, and for the
agent as the DSH bridge's harness_benchmark tool.`,
	}
	cmd.AddCommand(newBenchCasesCmd(g), newBenchCaptureCmd(g), newBenchSnapshotsCmd(g), newBenchRunCmd(g),
		newBenchMemoryCmd(g), newBenchShowCmd(g), newBenchListCmd(g))
	return cmd
}

// benchErr words the service's errors for the terminal: a bad field or
// argument (a 400) is a usage error (exit 2); a refusal with the seed's code (no frozen cases, a
// candidate that is not the reference plus the refinement), an unknown
// case, snapshot or run, a conflict: exit 1 with the message.
func benchErr(err error) error {
	var fe *benches.FieldError
	var coded *benches.CodedError
	var delta *bench.DeltaError
	switch {
	case errors.As(err, &fe):
		return usageErr("%s", fe.Error())
	case errors.As(err, &coded) && coded.Status == http.StatusBadRequest:
		return usageErr("%s", coded.Error()) // bad input, as the service words it (runs out of range)
	case errors.As(err, &delta), errors.As(err, &coded), errors.Is(err, benches.ErrNotFound), errors.Is(err, benches.ErrConflict):
		return &exitError{code: 1, err: err}
	}
	return err
}

func newBenchCasesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cases",
		Short: "Add, freeze and list benchmark cases",
		Long: `A case is a task statement the executor completes and a rubric the judge
scores it against (put the terms the judge looks for in backquotes), with
an id, a title, an optional capability tag and a set (a group of cases;
"default" when none). A case is added as a draft, which may still change;
freezing records the hash of its material (id, statement, rubric,
capability) and makes it immutable. Runs use frozen cases only.`,
	}
	cmd.AddCommand(newBenchCasesAddCmd(g), newBenchCasesFreezeCmd(g), newBenchCasesListCmd(g))
	return cmd
}

func newBenchCasesAddCmd(g *globals) *cobra.Command {
	var in api.CaseRequest
	var file string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add (--id ID --title T --statement S --rubric R [--capability C] [--set SET] | --file F)",
		Short: "Add a draft case, or a set of them from a JSON file",
		Long: `Add one draft case from flags, or every case of a case-set file (all or
nothing: a bad case adds none):

  {"set": "demo", "cases": [{"id": "…", "title": "…", "statement": "…",
    "rubric": "…", "capability": "…"}]}

examples/bench-cases.json is one. --set overrides an absent set in the
file; a different one is an error. Every text passes mull's trust gate: a
text that reads like an instruction to the agent is refused, naming the
field; a credential is redacted.

Examples:
  mull bench cases add --file examples/bench-cases.json
  mull bench cases add --set demo --id go-test-flags --title "Run one test" \
    --statement "Run only TestParse in ./parser" --rubric "Uses ` + "`go test -run`" + `"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := caseSetFromFlags(in, file, cmd.Flags().Changed("set"))
			if err != nil {
				return err
			}
			if field, problem := set.Check(); field != "" {
				return usageErr("%s: %s", field, problem)
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			added, err := addCases(cmd.Context(), a.bench, set, file != "")
			if err != nil {
				return benchErr(err)
			}
			if asJSON {
				return printJSON(g, added)
			}
			for _, c := range added {
				fmt.Fprintf(g.stdout, "added draft %s (set %s): %s\n", c.ID, setName(c.Set), oneLine(c.Title, 80))
			}
			fmt.Fprintf(g.stdout, "%d draft cases added; 'mull bench cases freeze --set %s' freezes them\n", len(added), setName(set.Set))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "a case-set JSON file {set, cases:[{id,title,statement,rubric,capability}]}")
	f.StringVar(&in.ID, "id", "", "the case id (letters, digits, . _ -; at most 128)")
	f.StringVar(&in.Set, "set", "", `the case's set (default "default")`)
	f.StringVar(&in.Title, "title", "", "a short title")
	f.StringVar(&in.Statement, "statement", "", "the task the executor completes")
	f.StringVar(&in.Rubric, "rubric", "", "what the judge scores against (backquote the terms it looks for)")
	f.StringVar(&in.Capability, "capability", "", "an optional capability tag")
	f.BoolVar(&asJSON, "json", false, "print the added cases as JSON")
	return cmd
}

// addCases adds a file's cases all or nothing, or the one case the flags
// give (its errors as the service words them).
func addCases(ctx context.Context, svc *benches.Service, set api.CaseSet, fromFile bool) ([]bench.Case, error) {
	if fromFile {
		return svc.AddCases(ctx, set.Inputs())
	}
	c, err := svc.AddCase(ctx, set.Inputs()[0])
	if err != nil {
		return nil, err
	}
	return []bench.Case{c}, nil
}

// caseSetFromFlags is the cases to add: the file's, or the one the flags
// give.
func caseSetFromFlags(in api.CaseRequest, file string, setChanged bool) (api.CaseSet, error) {
	if file == "" {
		return api.CaseSet{Set: in.Set, Cases: []api.CaseRequest{in}}, nil
	}
	if in.ID != "" || in.Title != "" || in.Statement != "" || in.Rubric != "" || in.Capability != "" {
		return api.CaseSet{}, usageErr("--file and --id/--title/--statement/--rubric/--capability: give one or the other")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return api.CaseSet{}, usageErr("--file: %v", err)
	}
	var set api.CaseSet
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&set); err != nil {
		return api.CaseSet{}, usageErr("--file %s: %v", file, err)
	}
	if setChanged {
		if set.Set != "" && set.Set != in.Set {
			return api.CaseSet{}, usageErr("--set %q: the file's set is %q", in.Set, set.Set)
		}
		set.Set = in.Set
	}
	return set, nil
}

// setName is a set as people read it.
func setName(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

func newBenchCasesFreezeCmd(g *globals) *cobra.Command {
	var set string
	cmd := &cobra.Command{
		Use:   "freeze (ID… | --set SET)",
		Short: "Freeze draft cases: record their material hash and make them immutable",
		Long: `Freeze the named draft cases, or every draft of --set. A frozen case's
material (id, statement, rubric, capability) is hashed (its case_hash) and
can no longer change: the database refuses it. A case already frozen is an
error (benchmark:freeze:not-draft); --set skips them.

Examples:
  mull bench cases freeze --set demo
  mull bench cases freeze go-test-flags`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 0) == (set == "") {
				return usageErr("give case ids or --set, not both and not neither")
			}
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			ctx := cmd.Context()
			if set != "" {
				cases, err := a.bench.FreezeSet(ctx, set)
				if err != nil {
					return benchErr(err)
				}
				for _, c := range cases {
					fmt.Fprintf(g.stdout, "frozen %s (case_hash %s)\n", c.ID, shortHash(c.Hash, 12))
				}
				fmt.Fprintf(g.stdout, "%d cases of set %s frozen\n", len(cases), set)
				return nil
			}
			for _, id := range args {
				c, err := a.bench.FreezeCase(ctx, id)
				if err != nil {
					return benchErr(err)
				}
				fmt.Fprintf(g.stdout, "frozen %s (case_hash %s)\n", c.ID, shortHash(c.Hash, 12))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&set, "set", "", "freeze every draft of this set")
	return cmd
}

// short cuts a hash for a table.
func shortHash(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func newBenchCasesListCmd(g *globals) *cobra.Command {
	var f benches.CaseFilter
	var state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--set SET] [--state draft|frozen] [--json]",
		Short: "List cases by set then id: set, id, state, hash, title",
		Long: `List the benchmark cases by set then id, with their state (draft or
frozen) and, once frozen, the first 12 digits of their case_hash.

Examples:
  mull bench cases list --set demo
  mull bench cases list --state frozen --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, problem := api.ParseCaseState(state)
			if problem != "" {
				return usageErr("--state: %s", problem)
			}
			f.State = st
			a, err := g.open(cmd.Context(), manage)
			if err != nil {
				return err
			}
			defer a.close()
			list, err := a.bench.Cases(cmd.Context(), f)
			if err != nil {
				return benchErr(err)
			}
			if asJSON {
				return printJSON(g, nonNilSlice(list))
			}
			printCases(g.stdout, list)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Set, "set", "", "only this set")
	fl.StringVar(&state, "state", "", "only draft or frozen cases")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printCases(w io.Writer, list []bench.Case) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no cases")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SET\tID\tSTATE\tHASH\tTITLE")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", setName(c.Set), oneLine(c.ID, 60), c.State, shortHash(c.Hash, 12), oneLine(c.Title, 70))
	}
	_ = tw.Flush()
}
