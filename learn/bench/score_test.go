package bench

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The decision's tests are the seed's tests/score.spec.ts, case by case
// and by name, plus the neighbours of the seed's numbers (tolerance 0,
// max_failed_cells 0, pass_threshold 60): each fixture sits where the
// seed's number and the one next to it decide differently, so changing a
// number fails a test (scripts/mutants.txt lists those changes).

var now = time.Date(2026, 8, 19, 12, 0, 0, 0, time.UTC)

// cellSpec is the seed's cell(): case-a, iteration 1 unless given.
type cellSpec struct {
	side     Side
	caseID   string
	iter     int
	score    float64
	failed   bool
	feedback string
}

func mk(specs ...cellSpec) []Cell {
	var out []Cell
	for _, s := range specs {
		c := Cell{RunID: "run-1", Side: s.side, CaseID: "case-a", Iteration: 1, Status: CellOK,
			SnapshotID: "snap-1", StateHash: strings.Repeat("0", 64), CaseHash: strings.Repeat("0", 64),
			RecordedAt: time.Date(2026, 8, 19, 0, 0, 0, 0, time.UTC), Feedback: s.feedback}
		if s.caseID != "" {
			c.CaseID = s.caseID
		}
		if s.iter != 0 {
			c.Iteration = s.iter
		}
		if s.failed {
			c.Status = CellFailed
			c.FailureReason = ProviderError
		} else {
			c.Score = ptr(s.score)
		}
		out = append(out, c)
	}
	return out
}

func ref(score float64) cellSpec  { return cellSpec{side: Reference, score: score} }
func cand(score float64) cellSpec { return cellSpec{side: Candidate, score: score} }
func failedCand() cellSpec        { return cellSpec{side: Candidate, failed: true} }

func decide(t *testing.T, cells []Cell, o Options) Decision {
	t.Helper()
	d, err := Decide("run-1", "refine-1", cells, o, now)
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	return d
}

func near(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 0.005 }

func opts(pass, tol float64, maxFailed int) Options {
	return Options{PassThreshold: pass, RegressionTolerance: tol, MaxFailedCells: maxFailed}
}

func TestDefaultOptionsAreTheSeeds(t *testing.T) {
	if want := opts(60, 0, 0); DefaultOptions != want {
		t.Fatalf("DefaultOptions = %+v, want the seed's %+v", DefaultOptions, want)
	}
}

// The five vectors issue 14 names, each against its neighbours.
func TestDecisionVectors(t *testing.T) {
	t.Run("accepts equal scores", func(t *testing.T) {
		d := decide(t, mk(ref(80), cand(80)), DefaultOptions)
		if d.Status != Accepted || len(d.Reasons) != 0 || len(d.RegressionCases) != 0 {
			t.Fatalf("got %s %q %v", d.Status, d.Reasons, d.RegressionCases)
		}
	})

	t.Run("rejects overall regression even when no case regresses", func(t *testing.T) {
		// Reference: case-a 2x100, case-b 1x0 -> 66.67. Candidate: case-a
		// 1x100, case-b 2x0 -> 33.33; every per-case mean is at least the
		// reference's, so only the overall rule can reject.
		d := decide(t, mk(
			cellSpec{side: Reference, caseID: "case-a", iter: 1, score: 100},
			cellSpec{side: Reference, caseID: "case-a", iter: 2, score: 100},
			cellSpec{side: Reference, caseID: "case-b", score: 0},
			cellSpec{side: Candidate, caseID: "case-a", score: 100},
			cellSpec{side: Candidate, caseID: "case-b", iter: 1, score: 0},
			cellSpec{side: Candidate, caseID: "case-b", iter: 2, score: 0},
		), DefaultOptions)
		if d.Status != Rejected || !near(d.ReferenceOverall, 66.67) || !near(d.CandidateOverall, 33.33) {
			t.Fatalf("got %s ref %v cand %v", d.Status, *d.ReferenceOverall, *d.CandidateOverall)
		}
		if len(d.RegressionCases) != 0 {
			t.Fatalf("regression cases %v, want none", d.RegressionCases)
		}
		want := []string{"candidate overall 33.33 < reference overall 66.67 − tolerance 0"}
		if !reflect.DeepEqual(d.Reasons, want) {
			t.Fatalf("reasons %q, want %q", d.Reasons, want)
		}
	})

	t.Run("rejects per-case regression even when overall is unchanged", func(t *testing.T) {
		// Reference: case-a 2x100, case-b 1x0 -> 66.67. Candidate: case-a
		// 2x60, case-b 1x80 -> 66.67, but case-a regressed 60 < 100.
		d := decide(t, mk(
			cellSpec{side: Reference, caseID: "case-a", iter: 1, score: 100},
			cellSpec{side: Reference, caseID: "case-a", iter: 2, score: 100},
			cellSpec{side: Reference, caseID: "case-b", score: 0},
			cellSpec{side: Candidate, caseID: "case-a", iter: 1, score: 60},
			cellSpec{side: Candidate, caseID: "case-a", iter: 2, score: 60},
			cellSpec{side: Candidate, caseID: "case-b", score: 80},
		), DefaultOptions)
		if d.Status != Rejected || !near(d.ReferenceOverall, 66.67) || !near(d.CandidateOverall, 66.67) {
			t.Fatalf("got %s ref %v cand %v", d.Status, *d.ReferenceOverall, *d.CandidateOverall)
		}
		if !reflect.DeepEqual(d.RegressionCases, []string{"case-a"}) {
			t.Fatalf("regression cases %v", d.RegressionCases)
		}
		want := []string{"case case-a regressed: 60 < 100 − 0"}
		if !reflect.DeepEqual(d.Reasons, want) {
			t.Fatalf("reasons %q, want %q", d.Reasons, want)
		}
		if m := d.PerCase["case-b"]; !near(m.Delta, 80) {
			t.Fatalf("case-b delta %v, want 80", m.Delta)
		}
	})

	t.Run("does not gate acceptance on passThreshold", func(t *testing.T) {
		// Equal scores below passThreshold are still accepted: it is
		// reported, never an acceptance condition.
		d := decide(t, mk(ref(55), cand(55)), opts(60, 0, 0))
		if d.Status != Accepted || d.CandidatePasses || d.PassThreshold != 60 {
			t.Fatalf("got %s passes=%v threshold=%v", d.Status, d.CandidatePasses, d.PassThreshold)
		}
	})

	t.Run("a failed cell is null and not 0", func(t *testing.T) {
		// With one failed cell allowed, the candidate's mean is over its ok
		// cell alone: 80, equal to the reference, accepted. Counted as 0 it
		// would be 40 and rejected.
		d := decide(t, mk(ref(80), cand(80), failedCand()), opts(60, 0, 1))
		if d.Status != Accepted || !near(d.CandidateOverall, 80) || d.FailedCandidate != 1 || d.UsableCandidate != 1 {
			t.Fatalf("got %s cand %v failed %d usable %d", d.Status, d.CandidateOverall, d.FailedCandidate, d.UsableCandidate)
		}
		if err := ValidateCell(mk(failedCand())[0]); err != nil {
			t.Fatalf("a failed cell with a null score: %v", err)
		}
		zero := mk(failedCand())[0]
		zero.Score = ptr(0)
		if err := ValidateCell(zero); err == nil || !strings.Contains(err.Error(), "failed-cell-score-not-null") {
			t.Fatalf("a failed cell scored 0: %v, want failed-cell-score-not-null", err)
		}
	})
}

// The seed's numbers against their neighbours, with the defaults.
func TestSeedNumbersAgainstNeighbours(t *testing.T) {
	t.Run("tolerance 0: a candidate 0.25 below the reference is rejected (0.5 would accept)", func(t *testing.T) {
		d := decide(t, mk(ref(80), cand(79.75)), DefaultOptions)
		want := []string{"candidate overall 79.75 < reference overall 80 − tolerance 0", "case case-a regressed: 79.75 < 80 − 0"}
		if d.Status != Rejected || !reflect.DeepEqual(d.Reasons, want) {
			t.Fatalf("got %s %q", d.Status, d.Reasons)
		}
	})
	t.Run("tolerance 0.5: the same candidate is accepted", func(t *testing.T) {
		if d := decide(t, mk(ref(80), cand(79.75)), opts(60, 0.5, 0)); d.Status != Accepted {
			t.Fatalf("got %s %q", d.Status, d.Reasons)
		}
	})
	t.Run("max_failed_cells 0: one failed candidate cell rejects (1 would accept)", func(t *testing.T) {
		d := decide(t, mk(ref(80), cand(85), failedCand()), DefaultOptions)
		want := []string{"1 failed candidate cells > max_failed_cells 0"}
		if d.Status != Rejected || !reflect.DeepEqual(d.Reasons, want) {
			t.Fatalf("got %s %q", d.Status, d.Reasons)
		}
	})
	t.Run("max_failed_cells 1: one failed candidate cell is accepted", func(t *testing.T) {
		if d := decide(t, mk(ref(80), cand(85), failedCand()), opts(60, 0, 1)); d.Status != Accepted {
			t.Fatalf("got %s %q", d.Status, d.Reasons)
		}
	})
	t.Run("failed reference cells are not limited by max_failed_cells", func(t *testing.T) {
		d := decide(t, mk(ref(80), cellSpec{side: Reference, failed: true}, cand(80)), DefaultOptions)
		if d.Status != Accepted || d.FailedReference != 1 || d.FailedCells != 1 {
			t.Fatalf("got %s %q", d.Status, d.Reasons)
		}
	})
	t.Run("pass_threshold 60: a candidate at 60 passes (61 would not)", func(t *testing.T) {
		if d := decide(t, mk(ref(60), cand(60)), DefaultOptions); !d.CandidatePasses || d.PassThreshold != 60 {
			t.Fatalf("passes=%v threshold=%v", d.CandidatePasses, d.PassThreshold)
		}
	})
	t.Run("pass_threshold 60: a candidate at 59.5 does not pass (59 would)", func(t *testing.T) {
		d := decide(t, mk(ref(59.5), cand(59.5)), DefaultOptions)
		if d.CandidatePasses || d.Status != Accepted {
			t.Fatalf("passes=%v status=%s", d.CandidatePasses, d.Status)
		}
	})
}

// tests/score.spec.ts, describe('aggregateCells').
func TestAggregate(t *testing.T) {
	t.Run("validates every input cell before aggregating", func(t *testing.T) {
		bad := func(score *float64, status CellStatus) []Cell {
			c := mk(cand(0))
			c[0].Score, c[0].Status = score, status
			return c
		}
		for _, tc := range []struct {
			cells []Cell
			want  string
		}{
			{bad(ptr(150), CellOK), "score-out-of-range"},
			{bad(ptr(42), CellFailed), "failed-cell-score-not-null"},
			{bad(nil, CellOK), "ok-cell-score-required"},
			{bad(ptr(math.NaN()), CellOK), "score-non-finite"},
			{bad(ptr(math.Inf(1)), CellOK), "score-non-finite"},
		} {
			if _, err := Aggregate(tc.cells, DefaultOptions); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		}
	})
	t.Run("rejects invalid option values loudly", func(t *testing.T) {
		for _, tc := range []struct {
			o    Options
			want string
		}{
			{opts(101, 0, 0), "passThreshold"},
			{opts(-1, 0, 0), "passThreshold"},
			{opts(math.NaN(), 0, 0), "passThreshold"},
			{opts(60, -1, 0), "regressionTolerance"},
			{opts(60, math.Inf(1), 0), "regressionTolerance"},
			{opts(60, 0, -1), "maxFailedCells"},
		} {
			if _, err := Aggregate(mk(cand(80)), tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: got %v, want %s", tc.o, err, tc.want)
			}
		}
		if _, err := Aggregate(mk(cand(80)), opts(100, 0, 0)); err != nil {
			t.Errorf("passThreshold 100 is in range: %v", err)
		}
	})
	t.Run("excludes failed cells from means and counts them separately", func(t *testing.T) {
		a, err := Aggregate(mk(
			cellSpec{side: Reference, iter: 1, score: 80},
			cellSpec{side: Reference, iter: 2, score: 90},
			cellSpec{side: Reference, iter: 3, failed: true},
			cellSpec{side: Candidate, iter: 1, score: 70},
			cellSpec{side: Candidate, iter: 2, score: 76},
		), DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		if *a.ReferenceOverall != 85 || *a.CandidateOverall != 73 || a.UsableReference != 2 || a.UsableCandidate != 2 ||
			a.FailedReference != 1 || a.FailedCandidate != 0 || a.FailedCells != 1 {
			t.Fatalf("got %+v", a)
		}
	})
	t.Run("computes per-case means for both sides", func(t *testing.T) {
		a, err := Aggregate(mk(
			cellSpec{side: Reference, caseID: "case-a", iter: 1, score: 100},
			cellSpec{side: Reference, caseID: "case-a", iter: 2, score: 80},
			cellSpec{side: Reference, caseID: "case-b", score: 60},
			cellSpec{side: Candidate, caseID: "case-a", score: 90},
			cellSpec{side: Candidate, caseID: "case-b", score: 66},
		), DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		ca, cb := a.PerCase["case-a"], a.PerCase["case-b"]
		if *ca.Reference != 90 || *ca.Candidate != 90 || *ca.Delta != 0 || *cb.Reference != 60 || *cb.Candidate != 66 || *cb.Delta != 6 {
			t.Fatalf("got a=%+v b=%+v", ca, cb)
		}
	})
	t.Run("records a null side mean for a case seen on only one side", func(t *testing.T) {
		a, err := Aggregate(mk(cand(70)), DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		m := a.PerCase["case-a"]
		if m.Reference != nil || *m.Candidate != 70 || m.Delta != nil || a.ReferenceOverall != nil || *a.CandidateOverall != 70 {
			t.Fatalf("got %+v %+v", a, m)
		}
	})
	t.Run("keeps a case whose cells all failed, with no means", func(t *testing.T) {
		a, err := Aggregate(mk(ref(80), cand(80), cellSpec{side: Reference, caseID: "case-b", failed: true},
			cellSpec{side: Candidate, caseID: "case-b", failed: true}), DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := a.PerCase["case-b"]; !ok || m.Reference != nil || m.Candidate != nil || m.Delta != nil {
			t.Fatalf("case-b: %+v %v", m, ok)
		}
	})
	t.Run("returns null overall when a side has only failed cells", func(t *testing.T) {
		a, err := Aggregate(mk(ref(80), failedCand()), DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		m := a.PerCase["case-a"]
		if *a.ReferenceOverall != 80 || a.CandidateOverall != nil || *m.Reference != 80 || m.Candidate != nil ||
			a.UsableCandidate != 0 || a.FailedCells != 1 {
			t.Fatalf("got %+v %+v", a, m)
		}
	})
}

// tests/score.spec.ts, describe('decideBenchmark'), the cases not above.
func TestDecide(t *testing.T) {
	t.Run("accepts candidate improvement", func(t *testing.T) {
		d := decide(t, mk(ref(80), cand(85)), DefaultOptions)
		if d.Status != Accepted || *d.ReferenceOverall != 80 || *d.CandidateOverall != 85 || len(d.RegressionCases) != 0 || d.FailedCells != 0 {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("rejects when candidate failed cells exceed maxFailedCells", func(t *testing.T) {
		d := decide(t, mk(ref(80), cellSpec{side: Candidate, iter: 1, failed: true}, cellSpec{side: Candidate, iter: 2, failed: true},
			cellSpec{side: Candidate, iter: 3, score: 85}), opts(60, 0, 1))
		if d.Status != Rejected || d.FailedCells != 2 || !reflect.DeepEqual(d.Reasons, []string{"2 failed candidate cells > max_failed_cells 1"}) {
			t.Fatalf("got %s %d %q", d.Status, d.FailedCells, d.Reasons)
		}
	})
	t.Run("accepts a candidate regression within tolerance", func(t *testing.T) {
		if d := decide(t, mk(ref(80), cand(78)), opts(60, 5, 0)); d.Status != Accepted {
			t.Fatalf("got %s %q", d.Status, d.Reasons)
		}
	})
	t.Run("rejects a candidate regression beyond tolerance", func(t *testing.T) {
		d := decide(t, mk(ref(80), cand(74)), opts(60, 5, 0))
		want := []string{"candidate overall 74 < reference overall 80 − tolerance 5", "case case-a regressed: 74 < 80 − 5"}
		if d.Status != Rejected || !reflect.DeepEqual(d.RegressionCases, []string{"case-a"}) || !reflect.DeepEqual(d.Reasons, want) {
			t.Fatalf("got %s %v %q", d.Status, d.RegressionCases, d.Reasons)
		}
	})
	t.Run("rejects when a side has no usable cells (insufficient evidence)", func(t *testing.T) {
		d := decide(t, mk(ref(80), failedCand()), DefaultOptions)
		if d.Status != Rejected || *d.ReferenceOverall != 80 || d.CandidateOverall != nil || len(d.RegressionCases) != 0 {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("rejects no usable candidate cell on rule (a) alone", func(t *testing.T) {
		d := decide(t, mk(ref(80), failedCand()), opts(60, 0, 1))
		if d.Status != Rejected || !reflect.DeepEqual(d.Reasons, []string{"no usable candidate cells"}) {
			t.Fatalf("got %s %q", d.Status, d.Reasons)
		}
	})
	t.Run("rejects no usable reference cell on rule (a) alone", func(t *testing.T) {
		d := decide(t, mk(cellSpec{side: Reference, failed: true}, cand(80)), DefaultOptions)
		if d.Status != Rejected || !reflect.DeepEqual(d.Reasons, []string{"no usable reference cells"}) {
			t.Fatalf("got %s %q", d.Status, d.Reasons)
		}
	})
	t.Run("rejects empty input with no usable cells on either side", func(t *testing.T) {
		d := decide(t, nil, DefaultOptions)
		if d.Status != Rejected || d.ReferenceOverall != nil || d.CandidateOverall != nil || d.FailedCells != 0 ||
			!reflect.DeepEqual(d.Reasons, []string{"no usable reference cells", "no usable candidate cells"}) {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("accepts only when every rule passes", func(t *testing.T) {
		d := decide(t, mk(
			cellSpec{side: Reference, caseID: "case-a", score: 90},
			cellSpec{side: Reference, caseID: "case-b", score: 70},
			cellSpec{side: Candidate, caseID: "case-a", score: 92},
			cellSpec{side: Candidate, caseID: "case-b", score: 71},
		), DefaultOptions)
		if d.Status != Accepted {
			t.Fatalf("got %s %q", d.Status, d.Reasons)
		}
	})
	t.Run("preserves non-empty cell feedback in input order", func(t *testing.T) {
		d := decide(t, mk(
			cellSpec{side: Reference, score: 80, feedback: "tighten the loop"},
			cellSpec{side: Candidate, score: 85, feedback: "improve error handling"},
			cellSpec{side: Candidate, score: 85, iter: 2},
			cellSpec{side: Candidate, score: 85, iter: 3, feedback: "  \n"},
		), DefaultOptions)
		if d.Status != Accepted || !reflect.DeepEqual(d.Feedback, []string{"tighten the loop", "improve error handling"}) {
			t.Fatalf("got %s %q", d.Status, d.Feedback)
		}
	})
	t.Run("records autoRollback false, run identity, and a deterministic createdAt", func(t *testing.T) {
		d := decide(t, mk(ref(80), cand(85)), DefaultOptions)
		if d.AutoRollback || d.RunID != "run-1" || d.RefinementID != "refine-1" || !d.CreatedAt.Equal(now) {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("validates input cells through the decision path too", func(t *testing.T) {
		c := mk(cand(0))
		c[0].Score = ptr(150)
		if _, err := Decide("run-1", "refine-1", c, DefaultOptions, now); err == nil || !strings.Contains(err.Error(), "score-out-of-range") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestValidateCell(t *testing.T) {
	for _, tc := range []struct {
		name  string
		score *float64
		st    CellStatus
		side  Side
		want  string
	}{
		{"0 is a score", ptr(0), CellOK, Candidate, ""},
		{"100 is a score", ptr(100), CellOK, Reference, ""},
		{"a decimal is a score", ptr(82.5), CellOK, Candidate, ""},
		{"below 0", ptr(-0.01), CellOK, Candidate, "score-out-of-range"},
		{"above 100", ptr(100.01), CellOK, Candidate, "score-out-of-range"},
		{"-Inf", ptr(math.Inf(-1)), CellOK, Candidate, "score-non-finite"},
		{"unknown side", ptr(50), CellOK, "left", "unknown-side"},
		{"unknown status", ptr(50), "skipped", Candidate, "unknown-status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateCell(Cell{Side: tc.side, Status: tc.st, Score: tc.score})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
