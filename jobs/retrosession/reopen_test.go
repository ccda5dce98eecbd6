package retrosession_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A session that went idle (its retro enqueued), then went on and ended,
// gets a second retro; replaying its end enqueues nothing more.
func TestReopenedSessionGetsItsOwnRetro(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		reg := engine.NewRegistry(nil)
		engine.Add(reg, retrosession.Spec, &retrosession.Worker{Store: s, Logger: enginetest.Logger()})
		client := enginetest.NewClient(t, s, reg, enginetest.Config(), false)
		svc := ingest.New(s, ingest.Hooks{SessionEnded: retrosession.SessionEnded})
		svc.UseClient(client)
		const id = "session-long"
		t0 := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)
		mk := func(n int, at time.Time, typ events.Type, payload string) events.Event {
			return events.Event{ID: fmt.Sprintf("%s-%d", id, n), Type: typ, SessionID: id, Workspace: ws, Time: at,
				Payload: json.RawMessage(payload)}
		}
		send := func(evs ...events.Event) {
			t.Helper()
			if _, err := svc.IngestBatch(ctx, evs, store.SourcePush); err != nil {
				t.Fatal(err)
			}
		}
		retros := func() []retrosession.Args {
			t.Helper()
			res, err := client.JobList(ctx, river.NewJobListParams().Kinds("retro_session"))
			if err != nil {
				t.Fatal(err)
			}
			var out []retrosession.Args
			for _, j := range res.Jobs {
				var a retrosession.Args
				if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
					t.Fatal(err)
				}
				out = append(out, a)
			}
			return out
		}
		send(mk(0, t0, events.SessionStart, `{"title":"long task","primary":true}`), mk(1, t0.Add(time.Second), events.UserMessage, `{"text":"go"}`))
		if n, err := svc.EndIdle(ctx, time.Hour); err != nil || n != 1 {
			t.Fatalf("EndIdle = %d, %v", n, err)
		}
		if got := retros(); len(got) != 1 || got[0].SessionID != id || got[0].Through == "" {
			t.Fatalf("retros after going idle: %+v", got)
		}
		later := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
		end := mk(3, later.Add(time.Second), events.SessionEnd, `{"reason":"completed"}`)
		send(mk(2, later, events.UserMessage, `{"text":"one more thing"}`), end)
		got := retros()
		if len(got) != 2 || got[0].Through == got[1].Through {
			t.Fatalf("retros after the session went on and ended: %+v", got)
		}
		send(end) // a replay
		if got := retros(); len(got) != 2 {
			t.Fatalf("a replayed end enqueued another retro: %+v", got)
		}
	})
}
