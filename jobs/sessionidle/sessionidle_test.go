package sessionidle_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/sessionidle"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestWorkerEndsIdleSessions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		now := time.Now().UTC()
		svc := ingest.New(s, ingest.Hooks{})
		ctx := context.Background()
		batch := []events.Event{
			{ID: "q", Type: events.ToolResult, SessionID: "session-quiet", Workspace: "/w", Time: now.Add(-time.Hour),
				Payload: json.RawMessage(`{"tool":"bash","is_error":false}`)},
			{ID: "b", Type: events.UserMessage, SessionID: "session-busy", Workspace: "/w", Time: now,
				Payload: json.RawMessage(`{"text":"still here"}`)},
		}
		if _, err := svc.IngestBatch(ctx, batch, store.SourcePush); err != nil {
			t.Fatal(err)
		}
		reg := engine.NewRegistry(nil)
		engine.Add(reg, sessionidle.Spec, &sessionidle.Worker{Ingest: svc, Idle: 30 * time.Minute, Logger: enginetest.Logger()})
		client := enginetest.Start(t, s, reg, enginetest.Config())
		evs := enginetest.Events(t, client)
		res, err := client.Insert(ctx, sessionidle.Args{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if row := enginetest.WaitFinal(t, evs, res.Job.ID); row.State != rivertype.JobStateCompleted || row.Queue != "maintenance" {
			t.Fatalf("session_idle job ended %s on queue %s", row.State, row.Queue)
		}
		for id, want := range map[string]string{"session-quiet": store.SessionIdle, "session-busy": store.SessionOpen} {
			sess, err := s.GetSession(ctx, id)
			if err != nil || sess.Status != want {
				t.Fatalf("%s: %s (%v), want %s", id, sess.Status, err, want)
			}
		}
	})
}
