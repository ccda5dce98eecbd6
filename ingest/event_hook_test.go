package ingest_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A kind hooks any stored event type through the registry (OnEvent):
// the hook runs for newly stored events of that type only, in batch
// order, with the session as saved, once per event (a replay runs none),
// and never for an imported session mull was never pushed (not live).
// OnTurnEnded is OnEvent(turn_end) and keeps working beside it.
func TestEventHookRunsForItsTypes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		newClock(s, t0)
		reg := engine.NewRegistry(nil)
		var ran []string
		hook := func(name string) engine.EventHook {
			return func(_ context.Context, _ *sql.Tx, _ *engine.Client, sess store.Session, e events.Event) error {
				if sess.ID != e.SessionID || sess.Events == 0 {
					t.Errorf("hook %s for %s got session %+v", name, e.ID, sess)
				}
				ran = append(ran, name+":"+e.ID)
				return nil
			}
		}
		reg.OnEvent(events.CompactionEnd, hook("compact"))
		reg.OnTurnEnded(hook("turn"))
		reg.OnEvent(events.TurnEnd, hook("turn2"))
		if !reg.EventHooked(events.CompactionEnd) || reg.EventHooked(events.Feedback) || reg.TurnHooked() != 2 {
			t.Fatalf("hooked: compaction %t, feedback %t, turn_end %d", reg.EventHooked(events.CompactionEnd),
				reg.EventHooked(events.Feedback), reg.TurnHooked())
		}
		svc := ingest.New(s, ingest.Hooks{Event: reg.Event, Hooked: reg.EventHooked})
		svc.UseClient(enginetest.NewClient(t, s, reg, enginetest.Config(), false))

		compaction := func(id, session string, off time.Duration) events.Event {
			e := ev(id, session, events.ToolResult, off)
			e.Type, e.Payload = events.CompactionEnd, json.RawMessage(`{}`)
			return e
		}
		batch := []events.Event{
			ev("e1", "session-a", events.SessionStart, 0),
			ev("e2", "session-a", events.TurnEnd, time.Second),
			compaction("e3", "session-a", 2*time.Second),
			ev("e4", "session-a", events.Feedback, 3*time.Second),
		}
		ingestOK(t, svc, batch, store.SourcePush)
		ingestOK(t, svc, batch, store.SourcePush) // a replay stores and runs nothing
		if want := []string{"turn:e2", "turn2:e2", "compact:e3"}; !slices.Equal(ran, want) {
			t.Fatalf("hooks ran %v, want %v", ran, want)
		}

		ran = nil
		ingestOK(t, svc, []events.Event{compaction("i1", "session-imported", 0)}, store.SourceImport)
		if len(ran) != 0 {
			t.Fatalf("an imported session that was never pushed ran %v", ran)
		}
	})
}
