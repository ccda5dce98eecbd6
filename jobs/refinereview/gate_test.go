package refinereview_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river"
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
		if g := e.gate("s1"); g.Turns != 0 || g.Pending || g.Enqueued || !g.EnqueuedAt.IsZero() || !g.LastAttemptAt.Equal(started) {
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

		e.advance(time.Hour)
		e.compaction("s1")
		if js := e.jobs(); len(js) != 2 {
			t.Fatalf("a compaction after the session ended enqueued a review: %d jobs", len(js))
		}

		e.open("s2")
		e.ingest("s2", events.SessionEnd, events.SessionEndPayload{Reason: "completed"})
		if js := e.jobs(); len(js) != 2 {
			t.Fatalf("a session ending with nothing due enqueued a review: %d jobs", len(js))
		}
	})
}

// A session the idle sweep ended drains its due review like an ended one;
// when it goes on (a newer event reopens it), its gate opens again and
// counts from where it was.
func TestIdleSessionThatGoesOnReviewsAgain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 1, nil)
		e.open("s1")
		e.compaction("s1")
		e.onlyJob(1)
		e.compaction("s1") // due, held by the cooldown
		e.setNow(t0.Add(3 * time.Hour))
		if n, err := e.wiring.Ingest.EndIdle(context.Background(), time.Hour); err != nil || n != 1 {
			t.Fatalf("idle sweep ended %d sessions: %v", n, err)
		}
		if a := argsOf(t, e.onlyJob(2)); a.Trigger != harness.SessionEnd {
			t.Fatalf("idle drain %+v", a)
		}
		if g := e.gate("s1"); !g.Closed {
			t.Fatalf("gate %+v after the idle end", g)
		}
		e.n = 3 * 3600 // the session goes on after its last event, after the drain's cooldown
		e.advance(20 * time.Minute)
		e.compaction("s1")
		if a := argsOf(t, e.onlyJob(3)); a.Trigger != harness.Compact {
			t.Fatalf("review after the session went on %+v", a)
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

// A gate that says a review is queued, an hour after its last attempt
// started, is checked against River: a dead job (a panic or a kill on its
// last attempt never ended the gate) gets a new review; a live one (a
// snoozed or scheduled job) keeps the gate as it was.
func TestStaleGateIsChecked(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 1, nil)
		put := func(session string, g harness.Gate) {
			t.Helper()
			if err := s.InTx(context.Background(), func(tx *sql.Tx) error {
				return s.PutHarnessGate(context.Background(), tx, session, ws, g)
			}); err != nil {
				t.Fatal(err)
			}
		}
		stuck := harness.Gate{Turns: 3, Enqueued: true, LastAttemptAt: e.clock().Add(-time.Hour - time.Second)}
		e.open("s1")
		put("s1", stuck)
		e.compaction("s1")
		if a := argsOf(t, e.onlyJob(1)); a.Trigger != harness.Compact || a.Turns != 3 {
			t.Fatalf("review after a stuck gate %+v", a)
		}

		e.open("s2")
		put("s2", stuck)
		if _, err := e.client.Insert(context.Background(), refinereview.Args{Session: "s2", Trigger: harness.Manual},
			&river.InsertOpts{ScheduledAt: time.Now().Add(24 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		e.compaction("s2")
		if n := len(e.jobs()); n != 2 {
			t.Fatalf("%d jobs, want s1's review and s2's scheduled one", n)
		}
		if g := e.gate("s2"); g != stuck {
			t.Fatalf("gate %+v, want it as it was: %+v", g, stuck)
		}

		e.open("s3")
		put("s3", harness.Gate{Enqueued: true, LastAttemptAt: e.clock().Add(-time.Hour)})
		e.compaction("s3")
		if n := len(e.jobs()); n != 2 {
			t.Fatalf("a gate queued exactly an hour ago was not trusted: %d jobs", n)
		}

		// A gate whose job's first attempt has not started (no attempt, no
		// enqueue time known) is trusted: turn_end events while the first
		// review waits do not each pay an insert.
		e.open("s4")
		put("s4", harness.Gate{Enqueued: true})
		e.compaction("s4")
		if n := len(e.jobs()); n != 2 {
			t.Fatalf("a gate with no attempt yet was checked: %d jobs", n)
		}
		// One enqueued over an hour ago with no attempt since is checked.
		e.open("s5")
		put("s5", harness.Gate{Enqueued: true, EnqueuedAt: e.clock().Add(-time.Hour - time.Second)})
		e.compaction("s5")
		if n := len(e.jobs()); n != 3 {
			t.Fatalf("a gate enqueued over an hour ago with no attempt was not checked: %d jobs", n)
		}
	})
}
