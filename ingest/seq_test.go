package ingest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// seq numbers a session's events 1, 2, 3… in the order they were sent,
// within a batch (ids out of order, a duplicate skipped) and across batches,
// per session; a replay numbers nothing.
func TestEventSeq(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		newClock(s, t0)
		svc := ingest.New(s, ingest.Hooks{})
		// Ids sort against the order sent: z before a. Times go backwards
		// too, so neither ids nor times give the order.
		first := []events.Event{
			ev("z-1", "session-a", events.UserMessage, -time.Minute),
			ev("m-2", "session-b", events.UserMessage, -time.Minute),
			ev("a-3", "session-a", events.ToolResult, -2*time.Minute),
			ev("z-1", "session-a", events.UserMessage, -time.Minute), // twice in the batch
			ev("b-4", "session-a", events.ToolResult, -3*time.Minute),
		}
		ingestOK(t, svc, first, store.SourcePush)
		second := []events.Event{
			ev("a-3", "session-a", events.ToolResult, -2*time.Minute), // stored before
			ev("c-5", "session-a", events.TurnEnd, 0),
			ev("a-6", "session-b", events.TurnEnd, 0),
		}
		ingestOK(t, svc, second, store.SourceImport)
		ingestOK(t, svc, second, store.SourcePush) // a replay

		want := map[string]string{"session-a": "z-1:1 a-3:2 b-4:3 c-5:4", "session-b": "m-2:1 a-6:2"}
		for sess, w := range want {
			evs, err := s.EventsBySeq(ctx, s.DB, sess, 0, 100, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for i, e := range evs {
				if i > 0 {
					got += " "
				}
				got += fmt.Sprintf("%s:%d", e.ID, e.Seq)
			}
			if got != w {
				t.Errorf("%s by seq: %s; want %s", sess, got, w)
			}
			if last, err := s.LastEventSeq(ctx, s.DB, sess); err != nil || last != int64(len(evs)) {
				t.Errorf("%s last seq %d, %v; want %d", sess, last, err, len(evs))
			}
		}
		// A task's window (open_seq, close_seq]: events 2 and 3 of session-a.
		if evs, err := s.EventsBySeq(ctx, s.DB, "session-a", 1, 3, 0); err != nil || len(evs) != 2 || evs[0].ID != "a-3" || evs[1].ID != "b-4" {
			t.Fatalf("window (1,3]: %+v, %v", evs, err)
		}
		// A window longer than the limit keeps its first event and its
		// newest: the request that opened the task and how it ended.
		all, err := s.EventsBySeq(ctx, s.DB, "session-a", 0, 100, 0)
		if err != nil || len(all) < 4 {
			t.Fatalf("window of session-a: %d events, %v; the fixture needs at least 4", len(all), err)
		}
		cut, err := s.EventsBySeq(ctx, s.DB, "session-a", 0, 100, 3)
		if err != nil || len(cut) != 3 || cut[0].ID != all[0].ID || cut[1].ID != all[len(all)-2].ID || cut[2].ID != all[len(all)-1].ID {
			t.Fatalf("window cut to 3: %+v, %v; want the first and the newest two of %d", cut, err, len(all))
		}
		// SessionEvents carries seq too.
		if evs, err := s.SessionEvents(ctx, "session-b", 10); err != nil || len(evs) != 2 || evs[0].Seq != 1 || evs[1].Seq != 2 {
			t.Fatalf("session events %+v, %v", evs, err)
		}
	})
}
