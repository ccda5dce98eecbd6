package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/jobs/refinereview"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// TestHarnessRefineSurvivesSIGKILL kills the `mull serve` working a
// manual refine_review job between the fake DeepSeek's answer to its
// planner call and the job's commit, on SQLite and PostgreSQL: at the
// job's failpoints (refine_review.planned, before the completing
// transaction begins; refine_review.applied, inside it after the apply
// wrote its rows) and at a random moment just after the answer. Each
// time nothing of the killed attempt is stored (or all of it, when the
// random kill came after the commit); the process started after rescues
// the job and the refinement is applied exactly once: one refinement
// refine_<job id>, one review row, the entry one version on.
func TestHarnessRefineSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills mull serve processes")
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			r := newHarnessRig(t, dialect)
			// a serves HTTP only: the jobs are worked by the processes
			// the phases start and kill.
			a := r.serve(t, false)
			a.startSession(t, killSession)
			for _, point := range []string{refinereview.FailpointPlanned, refinereview.FailpointApplied} {
				t.Run(point, func(t *testing.T) { killAtFailpoint(t, r, a, point) })
			}
			t.Run("random", func(t *testing.T) { killAfterPlan(t, r, a) })
		})
	}
}

// killSession is the session whose store the kill tests refine.
const killSession = "killed"

// killAtFailpoint refines a new entry named after the failpoint with a
// worker that kills itself there, checks nothing is stored, and lets a
// new worker finish the job.
func killAtFailpoint(t *testing.T, r *harnessRig, a *serveProc, point string) {
	id := "at-" + point[len("refine_review."):]
	a.mustApply(t, killSession, mk("create", "memory", id, "content", ten))
	r.fake.answer(t, nil, planAnswer("after the kill", mk("update", "memory", id, "content", "after-kill", "reason", "the planner's")))
	k := r.serve(t, true, "MULL_TEST_FAILPOINT="+point)
	job := a.refine(t, killSession, "tighten entry "+id)
	waitSignal(t, r.fake.answered, callPlan)
	k.waitDead(t)

	wantVersions(t, a.mustEntry(t, killSession, harness.KindMemory, id), 1, ten)
	refID := fmt.Sprintf("refine_%d", job.JobID)
	if n := count(a.history(t, killSession), func(h harnesses.RefinementView) bool { return h.ID == refID }); n != 0 {
		t.Fatalf("refinement %s is stored after the kill at %s, before the commit", refID, point)
	}
	if n := count(a.reviews(t, killSession), func(rw harnesses.ReviewRow) bool { return rw.JobID == job.JobID }); n != 0 {
		t.Fatalf("job %d has review rows after the kill at %s, before the commit", job.JobID, point)
	}

	k = r.serve(t, true)
	st := a.waitRefine(t, killSession, job.JobID)
	if st.State != "completed" || st.Attempt != 2 || len(st.Errors) != 1 {
		t.Fatalf("job %d ended %s at attempt %d with errors %v; want completed at attempt 2 after the rescue", job.JobID, st.State, st.Attempt, st.Errors)
	}
	if n := r.fake.calls(callPlan); n != 2 {
		t.Fatalf("the planner was asked %d times, want 2 (answered, killed; retried)", n)
	}
	appliedOnce(t, a, job.JobID, id, st)
	k.kill9(t)
}

// killAfterPlan kills the worker at a random moment within 30ms after
// the planner's answer, before or after the job's commit, and checks the
// refinement is applied exactly once by the process started after: the
// planner asked once (it had committed) or twice (the kill beat the
// commit).
func killAfterPlan(t *testing.T, r *harnessRig, a *serveProc) {
	const id = "at-random"
	a.mustApply(t, killSession, mk("create", "memory", id, "content", ten))
	r.fake.answer(t, nil, planAnswer("after a random kill", mk("update", "memory", id, "content", "after-kill", "reason", "the planner's")))
	k := r.serve(t, true)
	job := a.refine(t, killSession, "tighten entry "+id)
	waitSignal(t, r.fake.answered, callPlan)
	after := randomDelay(killRNG(t), 30*time.Millisecond)
	k.kill9(t)
	r.serve(t, true)
	st := a.waitRefine(t, killSession, job.JobID)
	asked := r.fake.calls(callPlan)
	t.Logf("killed %s after the planner's answer; asked %d times (%s)", after, asked,
		map[int]string{1: "it had committed", 2: "the kill beat the commit"}[asked])
	if st.State != "completed" || asked < 1 || asked > 2 {
		t.Fatalf("job %d: %+v, planner asked %d times; want completed, asked once or twice", job.JobID, st, asked)
	}
	appliedOnce(t, a, job.JobID, id, st)
}

// appliedOnce checks the job's refinement applied its one edit of entry
// id exactly once.
func appliedOnce(t *testing.T, a *serveProc, jobID int64, id string, st refineStatus) {
	t.Helper()
	refID := fmt.Sprintf("refine_%d", jobID)
	if st.Refinement == nil || st.Refinement.ID != refID || len(st.Refinement.Edits) != 1 || !st.Refinement.Edits[0].Applied {
		t.Fatalf("job %d's refinement: %+v, want %s with its edit applied", jobID, st.Refinement, refID)
	}
	wantVersions(t, a.mustEntry(t, killSession, harness.KindMemory, id), 2, "after-kill")
	if n := count(a.history(t, killSession), func(h harnesses.RefinementView) bool { return h.ID == refID }); n != 1 {
		t.Fatalf("%d refinements %s in the history, want exactly one", n, refID)
	}
	rows := a.reviews(t, killSession)
	if n := count(rows, func(rw harnesses.ReviewRow) bool { return rw.JobID == jobID }); n != 1 {
		t.Fatalf("%d review rows of job %d, want exactly one: %+v", n, jobID, rows)
	}
	if st.Review == nil || st.Review.Outcome != harness.Approved || st.Review.RefinementID != refID {
		t.Fatalf("job %d's review: %+v, want approved naming %s", jobID, st.Review, refID)
	}
}
