// Package benchdecide is the bench_decide job kind: the step of a
// benchmark run that comes after every cell, reads them and records the
// code-owned decision (learn/bench.Decide). It never refines or rolls
// back anything.
package benchdecide

// Args name the run to decide.
type Args struct {
	// Run is the benchmark run's id (bench_…).
	Run string `json:"run"`
}

// Kind is "bench_decide".
func (Args) Kind() string { return "bench_decide" }
