package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// TestHarnessRefineSurvivesSIGKILL kills the `mull serve` working a
// refine_review job after the fake DeepSeek answered its planner call and
// before the job's completing transaction commits (the failpoint inside
// the harness apply, after its rows are written), on SQLite and
// PostgreSQL. Nothing of the attempt is stored; a process started after
// rescues the job, asks the planner again, and the refinement is applied
// exactly once: one refinement refine_<job id>, one review row, the entry
// one version on. Then a kill at a random moment just after a planner's
// answer (killAfterPlan).
func TestHarnessRefineSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills mull serve processes")
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			r := newHarnessRig(t, dialect)
			// a serves HTTP only: the job is worked by k, then by k2.
			a := r.serve(t, false)
			const session = "killed"
			a.startSession(t, session)
			a.mustApply(t, session, mk("create", "memory", "x", "content", ten))
			r.fake.answer(t, nil, planAnswer("after the kill", mk("update", "memory", "x", "content", "after-kill", "reason", "the planner's")))
			k := r.serve(t, true, "MULL_TEST_FAILPOINT="+store.FailpointHarnessApply)
			job := a.refine(t, session, "tighten entry x")
			waitSignal(t, r.fake.answered, callPlan)
			k.waitDead(t)

			wantVersions(t, a.mustEntry(t, session, harness.KindMemory, "x"), 1, ten)
			refID := fmt.Sprintf("refine_%d", job.JobID)
			if n := count(a.history(t, session), func(h harnesses.RefinementView) bool { return h.ID == refID }); n != 0 {
				t.Fatalf("refinement %s is stored after the kill before its commit", refID)
			}
			if rs := a.reviews(t, session); len(rs) != 0 {
				t.Fatalf("review rows %+v after the kill before the commit, want none", rs)
			}

			k = r.serve(t, true)
			st := a.waitRefine(t, job.JobID)
			if st.State != "completed" || st.Attempt != 2 || len(st.Errors) != 1 {
				t.Fatalf("job %d ended %s at attempt %d with errors %v; want completed at attempt 2 after the rescue", job.JobID, st.State, st.Attempt, st.Errors)
			}
			if st.Refinement == nil || st.Refinement.ID != refID || len(st.Refinement.Edits) != 1 || !st.Refinement.Edits[0].Applied {
				t.Fatalf("job %d's refinement: %+v, want %s with its edit applied", job.JobID, st.Refinement, refID)
			}
			if n := r.fake.calls(callPlan); n != 2 {
				t.Fatalf("the planner was asked %d times, want 2 (answered, killed; retried)", n)
			}
			wantVersions(t, a.mustEntry(t, session, harness.KindMemory, "x"), 2, "after-kill")
			if n := count(a.history(t, session), func(h harnesses.RefinementView) bool { return h.ID == refID }); n != 1 {
				t.Fatalf("%d refinements %s in the history, want exactly one", n, refID)
			}
			if rs := a.reviews(t, session); len(rs) != 1 || rs[0].JobID != job.JobID || rs[0].RefinementID != refID || rs[0].Outcome != harness.Approved {
				t.Fatalf("review rows %+v; want one, approved, of job %d naming %s", rs, job.JobID, refID)
			}
			killAfterPlan(t, r, a, k)
		})
	}
}

// killAfterPlan kills the worker at a random moment within 30ms after
// the planner's answer, before or after the job's commit, and checks the
// refinement is applied exactly once by the process started after: the
// planner asked once (it had committed) or twice (the kill beat the
// commit), one refinement, one review row, the entry one version on.
func killAfterPlan(t *testing.T, r *harnessRig, a, k *serveProc) {
	const session = "killed"
	a.mustApply(t, session, mk("create", "memory", "y", "content", ten))
	r.fake.answer(t, nil, planAnswer("after a random kill", mk("update", "memory", "y", "content", "after-kill", "reason", "the planner's")))
	job := a.refine(t, session, "tighten entry y")
	waitSignal(t, r.fake.answered, callPlan)
	after := randomDelay(killRNG(t), 30*time.Millisecond)
	k.kill9(t)
	r.serve(t, true)
	st := a.waitRefine(t, job.JobID)
	asked := r.fake.calls(callPlan)
	t.Logf("killed %s after the planner's answer; asked %d times (%s)", after, asked,
		map[int]string{1: "it had committed", 2: "the kill beat the commit"}[asked])
	refID := fmt.Sprintf("refine_%d", job.JobID)
	if st.State != "completed" || st.Refinement == nil || st.Refinement.ID != refID || asked < 1 || asked > 2 {
		t.Fatalf("job %d: %+v, planner asked %d times; want completed with %s, asked once or twice", job.JobID, st, asked, refID)
	}
	wantVersions(t, a.mustEntry(t, session, harness.KindMemory, "y"), 2, "after-kill")
	if n := count(a.history(t, session), func(h harnesses.RefinementView) bool { return h.ID == refID }); n != 1 {
		t.Fatalf("%d refinements %s in the history, want exactly one", n, refID)
	}
	if n := count(a.reviews(t, session), func(rw harnesses.ReviewRow) bool { return rw.JobID == job.JobID }); n != 1 {
		t.Fatalf("%d review rows of job %d, want exactly one", n, job.JobID)
	}
}
