package retrosession_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A retro that runs late (retried after a newer session's retro applied)
// keeps the newer session's handoff and says so; its memories still
// apply. A retro over evidence as new as the stored handoff's replaces it.
func TestLateRetroKeepsNewerHandoff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		older, newer := answer, answer
		older.Handoff = []string{"Worked on the older session.", "Tests fail.", "Next: the older session's step."}
		newer.Handoff = []string{"Worked on the newer session.", "Tests pass.", "Next: the newer session's step."}
		older.Facts = []retro.Entry{{Text: "the older session ran on SQLite"}}
		e := start(t, s, &fakeds.Script{Rules: []fakeds.Rule{
			{Kind: "retro_session", Marker: "OLDER-REQUEST", Response: &fakeds.Response{Content: mustJSON(older)}},
			{Kind: "retro_session", Marker: "NEWER-REQUEST", Response: &fakeds.Response{Content: mustJSON(newer)}},
		}})
		t0 := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
		sessionAt(t, s, "session-old", "OLDER-REQUEST", t0)
		sessionAt(t, s, "session-new", "NEWER-REQUEST", t0.Add(30*time.Minute))

		idNew := e.run(t, "session-new")
		h, _, _ := s.GetHandoff(ctx, s.DB, ws)
		if h.JobID != idNew || !h.SourceAt.Equal(t0.Add(30*time.Minute+3*time.Second)) {
			t.Fatalf("handoff %+v: want job %d's, drawn from its session's last event", h, idNew)
		}

		idOld := e.run(t, "session-old")
		if h, _, _ := s.GetHandoff(ctx, s.DB, ws); h.JobID != idNew || h.Text != strings.Join(newer.Handoff, "\n") {
			t.Fatalf("the late retro replaced the newer handoff: %+v", h)
		}
		if c := counts(t, s, idOld); c.Handoff || !c.HandoffStale || c.Added != 1 {
			t.Fatalf("late retro counts %+v: want its handoff kept out, its fact added", c)
		}

		// The newer session's retro run again replaces its own handoff.
		res, err := e.client.Insert(ctx, retrosession.Args{SessionID: "session-new", Requested: "again"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if row := enginetest.WaitFinal(t, e.events, res.Job.ID); row.State != rivertype.JobStateCompleted {
			t.Fatalf("rerun ended %s: %v", row.State, row.Errors)
		}
		if h, _, _ := s.GetHandoff(ctx, s.DB, ws); h.JobID != res.Job.ID {
			t.Fatalf("handoff %+v: want the rerun's, job %d", h, res.Job.ID)
		}
		if c := counts(t, s, res.Job.ID); !c.Handoff || c.HandoffStale {
			t.Fatalf("rerun counts %+v", c)
		}
	})
}

// sessionAt stores a primary session of ws that starts at t0 with the user
// request request and ends 3 seconds later.
func sessionAt(t *testing.T, s *store.Store, id, request string, t0 time.Time) {
	t.Helper()
	mk := func(n int, typ events.Type, payload string) events.Event {
		return events.Event{ID: fmt.Sprintf("%s-%d", id, n), Type: typ, SessionID: id, Workspace: ws,
			Time: t0.Add(time.Duration(n) * time.Second), Payload: json.RawMessage(payload)}
	}
	batch := []events.Event{
		mk(0, events.SessionStart, `{"title":"fix the build","primary":true}`),
		mk(1, events.UserMessage, fmt.Sprintf(`{"text":%q}`, request)),
		mk(2, events.ToolResult, `{"tool":"bash","command":"go test ./...","exit_code":1,"is_error":true,"output":"FAIL"}`),
		mk(3, events.SessionEnd, `{"reason":"completed"}`),
	}
	if _, err := ingest.New(s, ingest.Hooks{}).IngestBatch(context.Background(), batch, store.SourcePush); err != nil {
		t.Fatal(err)
	}
}
