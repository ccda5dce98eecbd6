package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/learn/bench"
)

// Every bench command explains itself: --help exits 0 with a long text
// and examples.
func TestBenchHelp(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"bench"}, {"bench", "cases"}, {"bench", "cases", "add"}, {"bench", "cases", "freeze"}, {"bench", "cases", "list"},
		{"bench", "capture"}, {"bench", "snapshots"}, {"bench", "run"}, {"bench", "memory"}, {"bench", "show"}, {"bench", "list"},
	} {
		code, out, errOut := mull(t, ctx, append(args, "--help")...)
		if code != 0 || len(out) < 400 {
			t.Errorf("%v --help: exit %d, %d bytes\n%s%s", args, code, len(out), out, errOut)
		}
		if len(args) > 2 || args[len(args)-1] != "bench" && args[len(args)-1] != "cases" {
			if !strings.Contains(out, "Examples:") {
				t.Errorf("%v --help has no examples", args)
			}
		}
	}
}

// Bad command lines exit 2 naming what is wrong, before or without
// touching the database.
func TestBenchUsageErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	base := []string{"--data-dir", dir}
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, `{"set":"demo","cases":[{"id":"a","title":"t","statement":"s","rubric":"r","owner":"me"}]}`)
	dup := filepath.Join(dir, "dup.json")
	writeFile(t, dup, `{"set":"demo","cases":[{"id":"a","title":"t","statement":"s","rubric":"r"},{"id":"a","title":"t","statement":"s","rubric":"r"}]}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cases", "add", "--title", "t"}, "id: required"},
		{[]string{"cases", "add", "--id", "a", "--title", "t", "--statement", "s"}, "rubric: required"},
		{[]string{"cases", "add", "--file", bad}, `unknown field "owner"`},
		{[]string{"cases", "add", "--file", dup}, "cases[1].id: duplicate id"},
		{[]string{"cases", "add", "--file", dup, "--id", "x"}, "give one or the other"},
		{[]string{"cases", "add", "--file", filepath.Join(dir, "none.json")}, "--file"},
		{[]string{"cases", "add", "--file", "../../examples/bench-cases.json", "--set", "other"}, `the file's set is "demo"`},
		{[]string{"cases", "freeze"}, "give case ids or --set"},
		{[]string{"cases", "freeze", "a", "--set", "demo"}, "give case ids or --set"},
		{[]string{"cases", "list", "--state", "old"}, "--state: want draft or frozen"},
		{[]string{"snapshots", "--limit", "0"}, "--limit 0"},
		{[]string{"run", "refine_1"}, "--reference is required"},
		{[]string{"run"}, "accepts 1 arg"},
		{[]string{"run", "refine_1", "--reference", "s", "--runs", "4"}, "runs (4) exceeds maxRuns (3)"},
		{[]string{"memory", "--workspace", "/w"}, "--cases is required"},
		{[]string{"memory", "--cases", "demo", "--runs", "-1"}, "runs must be a positive integer"}, // no --workspace: the current directory's
		{[]string{"memory", "--cases", "demo", "--workspace", "/w", "--runs", "-1"}, "runs must be a positive integer"},
		{[]string{"list", "--kind", "both"}, "--kind: want refinement or memory"},
		{[]string{"list", "--status", "done"}, "--status: want running"},
		{[]string{"list", "--limit", "1001"}, "--limit 1001"},
	} {
		code, out, errOut := mull(t, ctx, append(append(base, "bench"), tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("bench %v: exit %d, want 2 and %q\n%s%s", tc.args, code, tc.want, out, errOut)
		}
	}
}

// show's grid: a score per case, side and iteration, a failed cell as
// "failed (reason)" and never 0, a cell not yet recorded as "…"; then the
// decision with the overall means, each case's delta and the reasons.
func TestPrintBenchRun(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	run := benches.Run{ID: "bench_1", Kind: "refinement", RefinementID: "refine_7", Reference: "before", Candidate: "cand_1",
		CaseIDs: []string{"alpha", "beta"}, Runs: 2, Executor: "llm", Status: "decided", Total: 8, Done: 7, Failed: 1,
		Tokens: 12345, CostUSD: 0.0123, Created: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		Cells: []bench.Cell{
			{CaseID: "alpha", Side: bench.Reference, Iteration: 1, Status: bench.CellOK, Score: f(55)},
			{CaseID: "alpha", Side: bench.Reference, Iteration: 2, Status: bench.CellOK, Score: f(70)},
			{CaseID: "alpha", Side: bench.Candidate, Iteration: 1, Status: bench.CellOK, Score: f(85)},
			{CaseID: "alpha", Side: bench.Candidate, Iteration: 2, Status: bench.CellFailed, FailureReason: bench.Timeout},
			{CaseID: "beta", Side: bench.Reference, Iteration: 1, Status: bench.CellOK, Score: f(40)},
			{CaseID: "beta", Side: bench.Reference, Iteration: 2, Status: bench.CellOK, Score: f(40)},
			{CaseID: "beta", Side: bench.Candidate, Iteration: 1, Status: bench.CellOK, Score: f(25)},
		},
		Decision: &bench.Decision{Status: bench.Rejected, ReferenceOverall: f(51.25), CandidateOverall: f(55),
			PerCase: map[string]bench.CaseMeans{
				"alpha": {Reference: f(62.5), Candidate: f(85), Delta: f(22.5)},
				"beta":  {Reference: f(40), Candidate: f(25), Delta: f(-15)},
			},
			RegressionCases: []string{"beta"}, FailedCells: 1, FailedCandidate: 1, PassThreshold: 60,
			Reasons:  []string{"1 failed candidate cells > max_failed_cells 0", "case beta regressed: 25 < 40 − 0"},
			Feedback: []string{"missing `make ci`"}},
	}
	var b bytes.Buffer
	printBenchRun(&b, run)
	out := b.String()
	for _, want := range []string{
		"run bench_1: refinement refine_7",
		"cells 7/8 done, 1 failed, 12345 tokens, $0.0123",
		"alpha  reference  55  70\n",
		"alpha  candidate  85  failed (timeout)\n",
		"beta   candidate  25  …\n",
		"decision: REJECTED",
		"overall: reference 51.25, candidate 55 (delta +3.75); pass threshold 60: does not reach it",
		"alpha  62.5       85         +22.5",
		"beta   40         25         -15    regressed",
		"failed cells: 1 (reference 0, candidate 1)",
		"- case beta regressed: 25 < 40 − 0",
		"- missing `make ci`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "candidate  85  0") {
		t.Errorf("a failed cell printed as 0:\n%s", out)
	}
	if got := ProgressLine(benches.Run{Done: 3, Total: 12, Failed: 1, Tokens: 900, CostUSD: 0.00042}); got != "cells 3/12 done, 1 failed, 900 tokens, $0.0004" {
		t.Errorf("progress line %q", got)
	}
}
