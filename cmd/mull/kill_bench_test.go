package main

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/jobs/benchcell"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
)

// TestBenchSurvivesSIGKILL runs a 3-case × 2-side × 3-run benchmark (18
// cells) on the fake DeepSeek, on SQLite and PostgreSQL, and kills its
// workers with SIGKILL twice: the first once some cells are recorded,
// while the next calls are in flight (held by the fake); the second at the
// cell's failpoint (bench_cell.judged: the judge answered, the completing
// transaction not begun), which must store nothing. A third worker
// finishes the run: 18 cells, one per key, every score the fake's rule
// gives its case and side, one bench_decide job, the run decided once and
// accepted.
func TestBenchSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills mull serve processes")
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			r, fake := newBenchRig(t, dialect)
			// a serves HTTP only: the cells are worked by the processes
			// the test starts and kills.
			a := r.serve(t, false)
			const set, session = "killed", "bench-killed"
			// Reference "kx1 ky1": k1 55, k2 55, k3 40 (50 overall).
			// Candidate "kx1 kx2 ky1 kz1": k1 70, k2 55, k3 55 (60).
			a.addFrozenSet(t, set,
				benchCase{ID: "k1", Title: "K1", Statement: "Work k1", Rubric: rubric("kx1", "kx2")},
				benchCase{ID: "k2", Title: "K2", Statement: "Work k2", Rubric: rubric("ky1", "ky2")},
				benchCase{ID: "k3", Title: "K3", Statement: "Work k3", Rubric: rubric("kz1")})
			a.startSession(t, session)
			a.mustApply(t, session, mk("create", "prompt", "notes", "content", "kx1 ky1 and some padding", "title", "Notes"))
			a.capture(t, "killed-ref", session)
			ref := a.mustApply(t, session, mk("update", "prompt", "notes", "content", "kx1 kx2 ky1 kz1 padding", "reason", "more terms"))

			w := r.serve(t, true)
			run := a.startBench(t, ref.ID, "killed-ref", set, 3)
			if run.Total != 18 {
				t.Fatalf("run %s: %d cells, want 18", run.ID, run.Total)
			}
			// Some cells recorded, then every later call held: the worker
			// dies with cells in flight.
			fake.waitJudged(t, 4)
			a.waitCellsDone(t, run.ID, 2)
			fake.holdAll()
			fake.waitHeld(t)
			w.kill9(t)
			fake.release()
			before := a.benchRun(t, run.ID)
			t.Logf("killed with %d/18 cells recorded", before.Done)
			if before.Done < 2 || before.Done >= 18 || before.Status != "running" {
				t.Fatalf("after the kill: %d cells done, status %s; want some of 18, running", before.Done, before.Status)
			}

			// The next worker rescues the jobs and dies at its first
			// judged cell, before that cell's transaction: no cell is
			// recorded at or after its start. (A count would not do: on
			// PostgreSQL a COMMIT the first worker sent just before its
			// death may land after the count was read.)
			started := time.Now()
			w = r.serve(t, true, "MULL_TEST_FAILPOINT="+benchcell.FailpointJudged)
			w.waitDead(t)
			got := a.benchRun(t, run.ID)
			for _, c := range got.Cells {
				if !c.RecordedAt.Before(started) {
					t.Fatalf("cell %s recorded at %s, after the failpoint's worker started (%s)", cellKey(c), c.RecordedAt, started)
				}
			}
			if got.Status != "running" || got.Done >= 18 {
				t.Fatalf("after the failpoint: %s with %d cells done", got.Status, got.Done)
			}

			r.serve(t, true)
			run = a.waitBench(t, run.ID)
			_, judges := fake.counts()
			t.Logf("the judge was asked %d times for 18 cells", judges)
			checkKilledRun(t, r, run)
		})
	}
}

// checkKilledRun checks the finished run of TestBenchSurvivesSIGKILL.
func checkKilledRun(t *testing.T, r *harnessRig, run benches.Run) {
	t.Helper()
	if run.Status != "decided" || run.Decision == nil || run.Decided == nil {
		t.Fatalf("run %s ended %s, decision %+v", run.ID, run.Status, run.Decision)
	}
	want := map[string]map[bench.Side]float64{
		"k1": {bench.Reference: 55, bench.Candidate: 70},
		"k2": {bench.Reference: 55, bench.Candidate: 55},
		"k3": {bench.Reference: 40, bench.Candidate: 55},
	}
	seen := map[string]int{}
	for _, c := range run.Cells {
		seen[cellKey(c)]++
		if c.Status != bench.CellOK || !near(c.Score, want[c.CaseID][c.Side]) {
			t.Errorf("cell %s: %s score %s, want ok %v", cellKey(c), c.Status, num(c.Score), want[c.CaseID][c.Side])
		}
	}
	if len(run.Cells) != 18 || len(seen) != 18 || run.Done != 18 || run.Failed != 0 {
		t.Fatalf("%d cell rows, %d keys, %d done, %d failed; want 18 rows, one per key: %v", len(run.Cells), len(seen), run.Done, run.Failed, seen)
	}
	d := *run.Decision
	if d.Status != bench.Accepted || !near(d.ReferenceOverall, 50) || !near(d.CandidateOverall, 60) ||
		len(d.Reasons) != 0 || d.UsableReference != 9 || d.UsableCandidate != 9 {
		t.Errorf("decision %s, overall %s → %s, reasons %q, usable %d/%d; want ACCEPTED 50 → 60, 9/9",
			d.Status, num(d.ReferenceOverall), num(d.CandidateOverall), d.Reasons, d.UsableReference, d.UsableCandidate)
	}
	for id, m := range want {
		wantCase(t, d, id, m[bench.Reference], m[bench.Candidate])
	}
	jobs := r.benchJobs(t, "bench_decide")
	if len(jobs) != 1 || jobs[0].State != rivertype.JobStateCompleted {
		t.Fatalf("%d bench_decide jobs (%v), want one, completed", len(jobs), jobStates(jobs))
	}
	cells := r.benchJobs(t, "bench_cell")
	if len(cells) != 18 {
		t.Errorf("%d bench_cell jobs, want 18", len(cells))
	}
	for _, j := range cells {
		if j.State != rivertype.JobStateCompleted {
			t.Errorf("bench_cell job %d: %s", j.ID, j.State)
		}
	}
}

func jobStates(jobs []*rivertype.JobRow) []rivertype.JobState {
	var out []rivertype.JobState
	for _, j := range jobs {
		out = append(out, j.State)
	}
	return out
}
