// Package benchcell is the bench_cell job kind: one case × side ×
// iteration of a benchmark run, worked as a workflow step. It runs the
// executor (an LLM call, or a real DSH headless) on the side's snapshot,
// then the judge call, and records the cell once: ok with a score, or,
// once its attempts are spent, failed with a null score (never 0).
package benchcell

import "github.com/mullhq/mull/learn/bench"

// Args name one cell of a run.
type Args struct {
	// Run is the benchmark run's id (bench_…).
	Run       string     `json:"run"`
	Side      bench.Side `json:"side"`
	Case      string     `json:"case"`
	Iteration int        `json:"iteration"`
}

// Kind is "bench_cell".
func (Args) Kind() string { return "bench_cell" }
