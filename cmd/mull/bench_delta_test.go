package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
)

// TestBenchCandidateDelta starts a refinement's run whose candidate would
// carry a second, unrelated change (another refinement committed to the
// session's store after the reference was captured), against a `mull
// serve` that works jobs on the fake DeepSeek, on SQLite and PostgreSQL:
// it is refused with 409 benchmark:run:candidate-delta (history-mismatch)
// before any cell runs: no run, no candidate snapshot, no bench job, no
// LLM call. The same change alone, in a store whose reference is captured
// just before it, starts and is decided.
func TestBenchCandidateDelta(t *testing.T) {
	if testing.Short() {
		t.Skip("starts mull serve processes")
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			r, fake := newBenchRig(t, dialect)
			a := r.serve(t, true)
			a.addFrozenSet(t, "delta",
				benchCase{ID: "d1", Title: "D1", Statement: "Work d1", Rubric: rubric("dx1", "dx2")},
				benchCase{ID: "d2", Title: "D2", Statement: "Work d2", Rubric: rubric("dy1")})
			change := mk("update", "prompt", "notes", "content", "dx1 dx2 and the base", "reason", "the change under test")

			const mixed = "bench-delta-mixed"
			a.startSession(t, mixed)
			a.mustApply(t, mixed, mk("create", "prompt", "notes", "content", "dx1 and the base text", "title", "Notes"))
			a.capture(t, "mixed-ref", mixed)
			ref := a.mustApply(t, mixed, change)
			a.mustApply(t, mixed, mk("create", "memory", "unrelated", "content", "an unrelated note", "title", "Unrelated"))
			var refused struct {
				Error  string `json:"error"`
				Code   string `json:"code"`
				Reason string `json:"reason"`
			}
			a.call(t, http.MethodPost, "/v1/admin/bench/runs", map[string]any{"refinement_id": ref.ID,
				"reference_snapshot_id": "mixed-ref", "set": "delta"}, http.StatusConflict, &refused)
			if refused.Code != bench.DeltaCode || refused.Reason != string(bench.HistoryMismatch) || refused.Error == "" {
				t.Fatalf("a candidate with a second change: %+v, want %s (%s)", refused, bench.DeltaCode, bench.HistoryMismatch)
			}
			nothingStarted(t, r, a, fake)

			const alone = "bench-delta-alone"
			a.startSession(t, alone)
			a.mustApply(t, alone, mk("create", "prompt", "notes", "content", "dx1 and the base text", "title", "Notes"))
			a.capture(t, "alone-ref", alone)
			ref = a.mustApply(t, alone, change)
			run := a.waitBench(t, a.startBench(t, ref.ID, "alone-ref", "delta", 1).ID)
			if run.Status != "decided" || run.Decision == nil || run.Decision.Status != bench.Accepted || len(run.Cells) != 4 {
				t.Fatalf("the change alone: %s, %d cells, decision %+v", run.Status, len(run.Cells), run.Decision)
			}
			// d1 55 → 70, d2 40 → 40.
			wantCase(t, *run.Decision, "d1", 55, 70)
			wantCase(t, *run.Decision, "d2", 40, 40)
			if execs, judges := fake.counts(); execs != 4 || judges != 4 {
				t.Errorf("the run made %d executor and %d judge calls, want 4 and 4", execs, judges)
			}
		})
	}
}

// nothingStarted checks a refused run left nothing behind: no run, only
// the reference among the snapshots, no bench job in any state, and the
// fake DeepSeek never asked.
func nothingStarted(t *testing.T, r *harnessRig, a *serveProc, fake *benchFake) {
	t.Helper()
	var runs struct {
		Runs []benches.Run `json:"runs"`
	}
	a.call(t, http.MethodGet, "/v1/admin/bench/runs", nil, http.StatusOK, &runs)
	if len(runs.Runs) != 0 {
		t.Errorf("runs after a refused start: %+v", runs.Runs)
	}
	var snaps struct {
		Snapshots []json.RawMessage `json:"snapshots"`
	}
	a.call(t, http.MethodGet, "/v1/admin/bench/snapshots", nil, http.StatusOK, &snaps)
	if len(snaps.Snapshots) != 1 {
		t.Errorf("%d snapshots after a refused start, want the reference alone", len(snaps.Snapshots))
	}
	if jobs := r.benchJobs(t, "bench_cell", "bench_decide"); len(jobs) != 0 {
		t.Errorf("%d bench jobs after a refused start, want none", len(jobs))
	}
	if execs, judges := fake.counts(); execs+judges != 0 {
		t.Errorf("the fake was asked %d executor and %d judge calls by a refused start", execs, judges)
	}
}
