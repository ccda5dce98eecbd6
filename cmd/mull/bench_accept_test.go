package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
)

// benchVector is one of the seed's decision vectors played black box: two
// cases, one run each, a session whose prompt entry "notes" reads ref in
// the reference and cand in the candidate (the refinement under test
// updates it). The fake's executor echoes the entry's line and its judge
// scores 40 + 15 per rubric term the line holds, so the contents and
// rubrics set every cell's score; fail names executor calls answered
// malformed JSON on every attempt (a case's statement and a side's
// marker).
type benchVector struct {
	name       string
	a, b       []string // the rubric terms of cases <set>-a and <set>-b
	ref, cand  string
	failB      string // "": no failure; else the marker of the side whose case b fails
	check      func(t *testing.T, run benches.Run)
	failedCell string // the key of the failed cell, if any
}

// TestBenchDecisionVectors plays the seed's decision vectors by their
// names over the admin API, with a real `mull serve` working the cells on
// the fake DeepSeek, on SQLite and PostgreSQL: each run's status, means,
// regression cases, reasons and failed cells are read back from GET
// /v1/admin/bench/runs/{id}. The rig allows one failed candidate cell
// (bench.max_failed_cells = 1, tolerance 0, pass threshold 60).
func TestBenchDecisionVectors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts mull serve processes")
	}
	vectors := []benchVector{{
		// 70 and 55 on both sides: equal means, accepted.
		name: "accepts equal scores",
		a:    []string{"qa1", "qa2"}, b: []string{"qb1"},
		ref: "qa1 qa2 qb1 first", cand: "qa1 qa2 qb1 second",
		check: func(t *testing.T, run benches.Run) {
			d := wantDecision(t, run, bench.Accepted, 62.5, 62.5)
			wantCase(t, d, run.Set+"-a", 70, 70)
			wantCase(t, d, run.Set+"-b", 55, 55)
		},
	}, {
		// Overall is a mean over cells, not over cases: the reference's
		// case b failed (no mean, so it cannot regress), leaving the
		// reference 100 over case a alone; the candidate scores a 100 and
		// b 40, 70 overall. No case regressed; the overall rule rejects.
		name: "rejects overall regression even when no case regresses",
		a:    []string{"ra1", "ra2", "ra3", "ra4"}, b: []string{"rb1"},
		ref: "ra1 ra2 ra3 ra4 refside2", cand: "ra1 ra2 ra3 ra4 candside2", failB: "refside2",
		failedCell: "-b/reference/1",
		check: func(t *testing.T, run benches.Run) {
			d := wantDecision(t, run, bench.Rejected, 100, 70, "candidate overall 70 < reference overall 100 − tolerance 0")
			wantCase(t, d, run.Set+"-a", 100, 100)
			if m := d.PerCase[run.Set+"-b"]; m.Reference != nil || m.Delta != nil || !near(m.Candidate, 40) {
				t.Errorf("case b: %s, want no reference mean, candidate 40, no delta", means(m))
			}
			if d.FailedReference != 1 || d.FailedCandidate != 0 || d.UsableReference != 1 || d.UsableCandidate != 2 {
				t.Errorf("failed %d/%d usable %d/%d, want 1/0 and 1/2", d.FailedReference, d.FailedCandidate, d.UsableReference, d.UsableCandidate)
			}
		},
	}, {
		// Reference a 100, b 40; candidate a 70, b 70: both 70 overall,
		// case a regressed.
		name: "rejects per-case regression even when overall is unchanged",
		a:    []string{"sa1", "sa2", "sa3", "sa4"}, b: []string{"sb1", "sb2", "sb3", "sb4"},
		ref: "sa1 sa2 sa3 sa4", cand: "sa1 sa2 sb1 sb2",
		check: func(t *testing.T, run benches.Run) {
			d := wantDecision(t, run, bench.Rejected, 70, 70, "case "+run.Set+"-a regressed: 70 < 100 − 0")
			if !slices.Equal(d.RegressionCases, []string{run.Set + "-a"}) {
				t.Errorf("regression cases %v, want [%s-a]", d.RegressionCases, run.Set)
			}
			wantCase(t, d, run.Set+"-b", 40, 70)
		},
	}, {
		// 55 and 40 on both sides: 47.5, under the pass threshold of 60,
		// and accepted all the same.
		name: "does not gate acceptance on passThreshold",
		a:    []string{"ta1"}, b: []string{"tb1", "tb2"},
		ref: "ta1 before", cand: "ta1 after",
		check: func(t *testing.T, run benches.Run) {
			d := wantDecision(t, run, bench.Accepted, 47.5, 47.5)
			if d.CandidatePasses || d.PassThreshold != 60 {
				t.Errorf("passes %v at threshold %v, want false at 60", d.CandidatePasses, d.PassThreshold)
			}
		},
	}, {
		// The candidate's case b fails on every attempt: its cell is
		// recorded failed with a null score, and the candidate's mean is
		// over case a alone, 70, equal to the reference: accepted (one
		// failed cell allowed). Counted as 0 it would be 35, rejected.
		name: "a failed cell is null, not 0",
		a:    []string{"ua1", "ua2"}, b: []string{"ub1", "ub2"},
		ref: "ua1 ua2 ub1 ub2 refside5", cand: "ua1 ua2 ub1 ub2 candside5", failB: "candside5",
		failedCell: "-b/candidate/1",
		check: func(t *testing.T, run benches.Run) {
			d := wantDecision(t, run, bench.Accepted, 70, 70)
			if d.FailedCandidate != 1 || d.UsableCandidate != 1 || d.FailedCells != 1 {
				t.Errorf("failed candidate %d usable %d failed %d, want 1, 1, 1", d.FailedCandidate, d.UsableCandidate, d.FailedCells)
			}
			if m := d.PerCase[run.Set+"-b"]; m.Candidate != nil || m.Delta != nil || !near(m.Reference, 70) {
				t.Errorf("case b: %s, want reference 70, no candidate mean, no delta", means(m))
			}
		},
	}}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			r, fake := newBenchRig(t, dialect)
			a := r.serve(t, true)
			for i, v := range vectors {
				t.Run(v.name, func(t *testing.T) {
					t.Parallel()
					playVector(t, a, fake, fmt.Sprintf("v%d", i+1), v)
				})
			}
		})
	}
}

// playVector sets up the vector's cases, session, reference and
// refinement, runs it to its decision and checks the run.
func playVector(t *testing.T, a *serveProc, fake *benchFake, set string, v benchVector) {
	statement := func(c string) string { return "Work the case " + set + "-" + c + " through" }
	a.addFrozenSet(t, set,
		benchCase{ID: set + "-a", Title: "Case a", Statement: statement("a"), Rubric: rubric(v.a...)},
		benchCase{ID: set + "-b", Title: "Case b", Statement: statement("b"), Rubric: rubric(v.b...)})
	session := "bench-" + set
	a.startSession(t, session)
	a.mustApply(t, session, mk("create", "prompt", "notes", "content", v.ref, "title", "Notes"))
	a.capture(t, set+"-ref", session)
	ref := a.mustApply(t, session, mk("update", "prompt", "notes", "content", v.cand, "reason", "the change under test"))
	rule := -1
	if v.failB != "" {
		rule = fake.failExecutor(statement("b"), v.failB)
	}
	run := a.waitBench(t, a.startBench(t, ref.ID, set+"-ref", set, 1).ID)
	if run.Status != "decided" || run.Decision == nil {
		t.Fatalf("run %s ended %s with decision %+v", run.ID, run.Status, run.Decision)
	}
	if len(run.Cells) != 4 || run.Done != 4 {
		t.Fatalf("run %s: %d cells, %d done, want 4", run.ID, len(run.Cells), run.Done)
	}
	for _, c := range run.Cells {
		key := cellKey(c)
		switch {
		case v.failedCell != "" && key == set+v.failedCell:
			if c.Status != bench.CellFailed || c.Score != nil || c.FailureReason != bench.MalformedExecutorJSON || c.Evidence != nil {
				t.Errorf("cell %s: %s score %v reason %q evidence %v, want failed, null, %s, none",
					key, c.Status, c.Score, c.FailureReason, c.Evidence, bench.MalformedExecutorJSON)
			}
		case c.Status != bench.CellOK || c.Score == nil || c.Evidence == nil || c.Feedback == "":
			t.Errorf("cell %s: %+v, want ok with a score, evidence and feedback", key, c)
		}
	}
	if rule >= 0 {
		// The failed cell's job ran all three attempts, each executor
		// call answered malformed; none was taken for a score.
		if n := fake.failedCalls(rule); n < 3 {
			t.Errorf("the failed cell's executor was asked %d times, want at least one per attempt (3)", n)
		}
		if run.Failed != 1 || run.Decision.FailedCells != 1 {
			t.Errorf("run: %d failed cells, decision %d, want 1", run.Failed, run.Decision.FailedCells)
		}
	}
	if run.Decision.AutoRollback || run.Decision.RunID != run.ID || run.Decision.RefinementID != ref.ID {
		t.Errorf("decision %+v, want run %s, refinement %s, no rollback", run.Decision, run.ID, ref.ID)
	}
	v.check(t, run)
}

// wantDecision checks the decision's status, overall means and reasons
// (none when accepted) and returns it.
func wantDecision(t *testing.T, run benches.Run, status bench.DecisionStatus, refOverall, candOverall float64, reasons ...string) bench.Decision {
	t.Helper()
	d := *run.Decision
	if d.Status != status || !near(d.ReferenceOverall, refOverall) || !near(d.CandidateOverall, candOverall) {
		t.Errorf("decision %s, overall reference %s candidate %s; want %s, %v and %v",
			d.Status, num(d.ReferenceOverall), num(d.CandidateOverall), status, refOverall, candOverall)
	}
	if !slices.Equal(d.Reasons, reasons) {
		t.Errorf("reasons %q, want %q", d.Reasons, reasons)
	}
	if status == bench.Accepted && len(d.RegressionCases) != 0 {
		t.Errorf("accepted with regression cases %v", d.RegressionCases)
	}
	if !strings.HasPrefix(strings.Join(d.Reasons, ""), "case") && len(d.RegressionCases) != 0 {
		t.Errorf("regression cases %v with reasons %q", d.RegressionCases, d.Reasons)
	}
	return d
}

// wantCase checks a case's means, and its delta.
func wantCase(t *testing.T, d bench.Decision, id string, ref, cand float64) {
	t.Helper()
	m := d.PerCase[id]
	if !near(m.Reference, ref) || !near(m.Candidate, cand) || !near(m.Delta, cand-ref) {
		t.Errorf("case %s: %s, want reference %v candidate %v", id, means(m), ref, cand)
	}
}

func near(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 0.01 }

func num(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

func means(m bench.CaseMeans) string {
	return fmt.Sprintf("reference %s candidate %s delta %s", num(m.Reference), num(m.Candidate), num(m.Delta))
}
