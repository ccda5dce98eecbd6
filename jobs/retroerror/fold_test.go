package retroerror_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/retroerror"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// newFoldRig is newRig with the hook also ending sessions, as mull wires it.
func newFoldRig(t *testing.T, s *store.Store) *rig {
	t.Helper()
	r := &rig{s: s, now: time.Now().UTC().Truncate(time.Second)}
	s.SetClock(func() time.Time { return r.now })
	reg := engine.NewRegistry(nil)
	engine.Add(reg, retroerror.Spec, &retroerror.Worker{Store: s, Logger: enginetest.Logger()})
	engine.Add(reg, retrosession.Spec, &retrosession.Worker{Store: s, Logger: enginetest.Logger()})
	r.client = enginetest.NewClient(t, s, reg, enginetest.Config(), false)
	h := &retroerror.Hook{Store: s, Logger: enginetest.Logger()}
	r.svc = ingest.New(s, ingest.Hooks{AgentError: h.AgentError, SessionEnded: h.SessionEnded})
	r.svc.UseClient(r.client)
	return r
}

// sessionRetros lists the session's retro_session jobs.
func (r *rig) sessionRetros(t *testing.T, id string) []*rivertype.JobRow {
	t.Helper()
	res, err := r.client.JobList(context.Background(), river.NewJobListParams().Kinds("retro_session").First(100))
	if err != nil {
		t.Fatal(err)
	}
	var out []*rivertype.JobRow
	for _, j := range res.Jobs {
		var a retrosession.Args
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			t.Fatal(err)
		}
		if a.SessionID == id {
			out = append(out, j)
		}
	}
	return out
}

// One retro per failing session: an error retro still waiting when the
// session ends (due within retro.error_delay of the end) is folded into the
// session retro; one that ran keeps the session retro retro.error_min_gap
// away; an error after the session retro waits the gap too.
func TestSessionRetroFoldsErrorRetro(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		r := newFoldRig(t, s)
		t0 := r.now

		// Errors, then the end 2 s later: one retro, the session's, now.
		r.start(t, "fails-then-ends", true)
		r.ingest(t, r.errs("fails-then-ends", 3)...)
		folded := r.jobs(t, "fails-then-ends")
		if len(folded) != 1 {
			t.Fatalf("%d error retros before the end", len(folded))
		}
		r.now = t0.Add(2 * time.Second)
		r.ingest(t, r.event("fails-then-ends", events.SessionEnd, `{"reason":"completed"}`))
		if js := r.jobs(t, "fails-then-ends"); len(js) != 0 {
			t.Fatalf("error retro not folded: %d left", len(js))
		}
		sr := r.sessionRetros(t, "fails-then-ends")
		if len(sr) != 1 || !near(sr[0].ScheduledAt, r.now) {
			t.Fatalf("session retros %+v, want one now", sr)
		}
		// An error arriving after it waits the gap from the session retro.
		r.now = t0.Add(10 * time.Second)
		r.ingest(t, r.errs("fails-then-ends", 1)...)
		js := r.jobs(t, "fails-then-ends")
		if len(js) != 1 || js[0].ScheduledAt.Sub(sr[0].ScheduledAt) < 60*time.Second {
			t.Fatalf("error retro after the session retro: %+v", js)
		}
		// Its log: the folded one marked, the count the rows not folded.
		rows, err := s.ErrorRetroSchedules(context.Background(), s.DB, "fails-then-ends", 0)
		if err != nil || len(rows) != 2 || rows[0].JobID != js[0].ID || rows[0].Folded || rows[1].JobID != folded[0].ID || !rows[1].Folded {
			t.Fatalf("scheduling rows %+v, %v; want job %d, then %d folded", rows, err, js[0].ID, folded[0].ID)
		}
		if st := r.state(t, "fails-then-ends"); st.Count != 1 {
			t.Fatalf("count %d, want 1 (the folded one taken back)", st.Count)
		}

		// Errors whose retro ran; the end 14 s later: the session retro
		// waits for the 60 s gap.
		r.now = t0
		r.start(t, "ran-then-ends", true)
		r.ingest(t, r.errs("ran-then-ends", 2)...)
		ran := r.jobs(t, "ran-then-ends")[0]
		r.complete(t, ran.ID)
		r.now = t0.Add(20 * time.Second)
		r.ingest(t, r.event("ran-then-ends", events.SessionEnd, `{"reason":"completed"}`))
		sr = r.sessionRetros(t, "ran-then-ends")
		if len(sr) != 1 || !near(sr[0].ScheduledAt, ran.ScheduledAt.Add(60*time.Second)) {
			t.Fatalf("session retro after an error retro that ran: %+v (error retro at %v)", sr, ran.ScheduledAt)
		}

		// A session without errors: its retro now, nothing else.
		r.now = t0.Add(30 * time.Second)
		r.start(t, "clean", true)
		r.ingest(t, r.event("clean", events.SessionEnd, `{"reason":"completed"}`))
		if sr := r.sessionRetros(t, "clean"); len(sr) != 1 || !near(sr[0].ScheduledAt, r.now) || len(r.jobs(t, "clean")) != 0 {
			t.Fatalf("clean session: %+v", sr)
		}
	})
}
