package refinereview_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/jobs/refinereview"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func argsOf(t *testing.T, j *rivertype.JobRow) refinereview.Args {
	t.Helper()
	var a refinereview.Args
	if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// 25 turn_end events give one review (24 give none); the counter resets
// when the attempt finishes; within the cooldown 25 more turns make a
// review due but start none, and the first turn after it starts it with
// the count that made it due (the count stands still while it waits).
func TestTurnIntervalGivesOneReview(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 1, nil)
		e.open("s1")
		e.turns("s1", 24)
		if js := e.jobs(); len(js) != 0 {
			t.Fatalf("24 turns enqueued %d reviews, want none", len(js))
		}
		if g := e.gate("s1"); g.Turns != 24 || g.Pending || g.Enqueued {
			t.Fatalf("gate after 24 turns %+v", g)
		}
		e.turns("s1", 1)
		job := e.onlyJob(1)
		a := argsOf(t, job)
		if job.State != rivertype.JobStateCompleted || a.Trigger != harness.TurnInterval || a.Turns != 25 ||
			a.Session != "s1" || a.Workspace != ws || a.ScopeKey != "session:s1" {
			t.Fatalf("job %s args %+v", job.State, a)
		}
		rs := e.reviews("s1")
		if len(rs) != 1 || rs[0].Outcome != harness.Declined || rs[0].Trigger != harness.TurnInterval || rs[0].Turns != 25 ||
			rs[0].JobID != job.ID || rs[0].Route != harness.RouteSummary || rs[0].Rationale == "" || rs[0].Scope != local("s1") {
			t.Fatalf("reviews %+v", rs)
		}
		started := e.clock()
		if g := e.gate("s1"); g.Turns != 0 || g.Pending || g.Enqueued || !g.LastAttemptAt.Equal(started) {
			t.Fatalf("gate after the review %+v, want reset with its start at %s", g, started)
		}

		e.advance(19 * time.Minute)
		e.turns("s1", 30)
		if js := e.jobs(); len(js) != 1 {
			t.Fatalf("25 turns within the cooldown enqueued a review: %d jobs", len(js))
		}
		if g := e.gate("s1"); g.Turns != 25 || !g.Pending || g.PendingReason != harness.TurnInterval || g.Enqueued {
			t.Fatalf("gate parked by the cooldown %+v", g)
		}
		e.advance(time.Minute) // exactly the cooldown since the attempt started
		e.turns("s1", 1)
		if a := argsOf(t, e.onlyJob(2)); a.Trigger != harness.TurnInterval || a.Turns != 25 {
			t.Fatalf("the parked review ran with %+v", a)
		}
	})
}

// compaction_end makes a review due: one at once, none within the
// cooldown of the last attempt's start (19m59s), one at it; with
// harness.compact false, none.
func TestCompactionWithinCooldownGivesNone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 1, nil)
		e.open("s1")
		e.compaction("s1")
		if a := argsOf(t, e.onlyJob(1)); a.Trigger != harness.Compact || a.Turns != 0 {
			t.Fatalf("compaction's review %+v", a)
		}
		e.advance(20*time.Minute - time.Second)
		e.compaction("s1")
		if js := e.jobs(); len(js) != 1 {
			t.Fatalf("a compaction within the cooldown enqueued a review: %d jobs", len(js))
		}
		if g := e.gate("s1"); !g.Pending || g.PendingReason != harness.Compact {
			t.Fatalf("gate %+v: the review should be due", g)
		}
		e.advance(time.Second)
		e.compaction("s1")
		e.onlyJob(2)
		if rs := e.reviews("s1"); len(rs) != 2 || rs[0].Trigger != harness.Compact {
			t.Fatalf("reviews %+v", rs)
		}
	})
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 1, func(c *config.Config) { c.Harness.Compact = ptr(false) })
		e.open("s1")
		e.compaction("s1")
		if js := e.jobs(); len(js) != 0 {
			t.Fatalf("harness.compact false: a compaction enqueued %d reviews", len(js))
		}
	})
}

// A session's end drains a review the cooldown held, ignoring the
// cooldown, and closes the gate: later events start nothing. A session
// that ends with nothing due gets no review.
func TestSessionEndDrainsPending(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 1, nil)
		e.open("s1")
		e.compaction("s1")
		e.onlyJob(1)
		e.advance(time.Minute)
		e.compaction("s1")
		if js := e.jobs(); len(js) != 1 {
			t.Fatalf("%d jobs before the end", len(js))
		}
		e.ingest("s1", events.SessionEnd, events.SessionEndPayload{Reason: "completed"})
		job := e.onlyJob(2)
		if a := argsOf(t, job); a.Trigger != harness.SessionEnd || job.State != rivertype.JobStateCompleted {
			t.Fatalf("drained job %s %+v", job.State, a)
		}
		if rs := e.reviews("s1"); len(rs) != 2 || rs[0].Trigger != harness.SessionEnd || rs[0].JobID != job.ID {
			t.Fatalf("reviews %+v", rs)
		}
		if g := e.gate("s1"); !g.Closed || g.Pending || g.Enqueued {
			t.Fatalf("gate after the drain %+v", g)
		}

		e.open("s2")
		e.ingest("s2", events.SessionEnd, events.SessionEndPayload{Reason: "completed"})
		if js := e.jobs(); len(js) != 2 {
			t.Fatalf("a session ending with nothing due enqueued a review: %d jobs", len(js))
		}
	})
}

// harness.enabled false: the hooks do nothing (no gate, no job); a manual
// refine still runs.
func TestDisabledStartsNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 1, func(c *config.Config) { c.Harness.Enabled = ptr(false) })
		e.open("s1")
		e.turns("s1", 25)
		e.compaction("s1")
		e.ingest("s1", events.SessionEnd, events.SessionEndPayload{Reason: "completed"})
		if js := e.jobs(); len(js) != 0 {
			t.Fatalf("harness.enabled false enqueued %d reviews", len(js))
		}
		if g := e.gate("s1"); g != (harness.Gate{}) {
			t.Fatalf("gate %+v, want none", g)
		}
		if j := e.run(refinereview.Args{Session: "s1", Trigger: harness.Manual}); j.State != rivertype.JobStateCompleted {
			t.Fatalf("manual refine %s", j.State)
		}
	})
}
