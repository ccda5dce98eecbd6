package ingest_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestReplayStoresOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		newClock(s, t0)
		svc := ingest.New(s, ingest.Hooks{})
		batch := append(turns("a", "session-a", 5, -time.Hour), turns("b", "session-b", 3, -time.Hour)...)
		batch = append(batch, batch[0]) // an id twice in one batch counts once

		res := ingestOK(t, svc, batch, store.SourcePush)
		if res.Stored != 8 || res.Duplicates != 1 || !slices.Equal(res.Sessions, []string{"session-a", "session-b"}) {
			t.Fatalf("first: %+v, want 8 stored, 1 duplicate, both sessions", res)
		}
		res = ingestOK(t, svc, batch, store.SourceImport)
		if res.Stored != 0 || res.Duplicates != 9 {
			t.Fatalf("replay: %+v, want 0 stored, 9 duplicates", res)
		}
		a := session(t, s, "session-a")
		if a.Events != 5 || a.Counts["tool_result"] != 5 {
			t.Fatalf("session-a after replay: %d events, counts %v; want 5", a.Events, a.Counts)
		}
		evs, err := s.SessionEvents(context.Background(), "session-a", 100)
		if err != nil || len(evs) != 5 {
			t.Fatalf("session-a has %d stored events (%v), want 5", len(evs), err)
		}
		if evs[0].Source != store.SourcePush || evs[0].ID != "a-0000" || !evs[0].Time.Equal(t0.Add(-time.Hour)) {
			t.Fatalf("first stored event %+v", evs[0])
		}

		// An id stored before is a duplicate even under another session,
		// which is then not created.
		stray := ev("a-0000", "session-stray", events.UserMessage, 0)
		if res := ingestOK(t, svc, []events.Event{stray}, store.SourcePush); res.Stored != 0 || res.Duplicates != 1 {
			t.Fatalf("stray replay: %+v", res)
		}
		if _, err := s.GetSession(context.Background(), "session-stray"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("session-stray: %v, want not found", err)
		}
	})
}

func TestBadEventStoresNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		newClock(s, t0)
		h := newHooked(t, s)
		batch := []events.Event{
			ev("e0", "session-1", events.SessionStart, 0),
			ev("e1", "session-1", events.Error, time.Second),
			ev("e2", "session-1", events.SessionEnd, 2*time.Second),
			ev("e3", "session-1", events.Feedback, 3*time.Second),
		}
		batch[3].Payload = json.RawMessage(`{"rating":"meh"}`)
		_, err := h.svc.IngestBatch(context.Background(), batch, store.SourcePush)
		var fe *events.FieldError
		if !errors.As(err, &fe) || fe.Index != 3 || fe.Field != "payload.rating" {
			t.Fatalf("error %v (%T), want a FieldError at event 3, payload.rating", err, err)
		}
		if _, err := s.GetSession(context.Background(), "session-1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("session stored from a rejected batch: %v", err)
		}
		if h.ended.Load() != 0 || h.errors.Load() != 0 || len(h.jobs(t)) != 0 {
			t.Fatal("hooks ran for a rejected batch")
		}
		if _, err := h.svc.IngestBatch(context.Background(), batch[:3], "carrier-pigeon"); err == nil {
			t.Fatal("unknown source accepted")
		}
	})
}

func TestSessionSummary(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		newClock(s, t0)
		h := newHooked(t, s)
		ctx := context.Background()
		no := false
		start := ev("s", "session-1", events.SessionStart, -50*time.Minute)
		start.Payload, _ = json.Marshal(events.SessionStartPayload{Title: "fix the build", Primary: &no})
		// Out of order, across two batches.
		ingestOK(t, h.svc, []events.Event{
			ev("t2", "session-1", events.ToolResult, -30*time.Minute),
			start,
			ev("t1", "session-1", events.ToolResult, -40*time.Minute),
		}, store.SourcePush)
		sess := session(t, s, "session-1")
		if sess.Status != store.SessionOpen || sess.Workspace != ws || sess.Title != "fix the build" || sess.Primary {
			t.Fatalf("after the first batch: %+v", sess)
		}
		res := ingestOK(t, h.svc, []events.Event{
			ev("x", "session-1", events.Error, -20*time.Minute),
			ev("f", "session-1", events.Feedback, -10*time.Minute),
			ev("end", "session-1", events.SessionEnd, -5*time.Minute),
			ev("early", "session-1", events.UserMessage, -55*time.Minute),
		}, store.SourcePush)
		if !slices.Equal(res.Ended, []string{"session-1"}) {
			t.Fatalf("ended %v, want session-1", res.Ended)
		}
		sess = session(t, s, "session-1")
		want := map[string]int64{"session_start": 1, "tool_result": 2, "error": 1, "feedback": 1, "session_end": 1, "user_message": 1}
		if !maps.Equal(sess.Counts, want) || sess.Events != 7 {
			t.Fatalf("counts %v (%d events), want %v", sess.Counts, sess.Events, want)
		}
		if !sess.FirstEventAt.Equal(t0.Add(-55*time.Minute)) || !sess.LastEventAt.Equal(t0.Add(-5*time.Minute)) {
			t.Fatalf("first/last %s / %s", sess.FirstEventAt, sess.LastEventAt)
		}
		if sess.Status != store.SessionEnded || sess.EndedAt == nil || !sess.EndedAt.Equal(t0.Add(-5*time.Minute)) || sess.EndReason != "completed" {
			t.Fatalf("after session_end: status %s, ended %v, reason %q", sess.Status, sess.EndedAt, sess.EndReason)
		}
		if h.ended.Load() != 1 || h.errors.Load() != 1 || !slices.Equal(h.jobs(t), []string{"session-1"}) {
			t.Fatalf("hooks: %d ended, %d errors, jobs %v; want 1, 1, [session-1]", h.ended.Load(), h.errors.Load(), h.jobs(t))
		}

		// Ended is final: a late event is counted, the session stays ended,
		// and neither a replay nor a second session_end runs the hooks again.
		ingestOK(t, h.svc, []events.Event{
			ev("late", "session-1", events.ToolResult, -time.Minute),
			ev("end2", "session-1", events.SessionEnd, 0),
			ev("x", "session-1", events.Error, -20*time.Minute),
		}, store.SourceImport)
		sess = session(t, s, "session-1")
		if sess.Status != store.SessionEnded || sess.Events != 9 || !sess.LastEventAt.Equal(t0) || !sess.EndedAt.Equal(t0.Add(-5*time.Minute)) {
			t.Fatalf("after late events: %+v", sess)
		}
		if h.ended.Load() != 1 || h.errors.Load() != 1 {
			t.Fatalf("hooks ran again: %d ended, %d errors", h.ended.Load(), h.errors.Load())
		}

		list, err := s.ListSessions(ctx, store.SessionFilter{Workspace: ws, Status: store.SessionEnded})
		if err != nil || len(list) != 1 || list[0].ID != "session-1" {
			t.Fatalf("list ended sessions of %s: %v, %v", ws, list, err)
		}
		if list, _ := s.ListSessions(ctx, store.SessionFilter{Workspace: "/elsewhere"}); len(list) != 0 {
			t.Fatalf("another workspace lists %v", list)
		}
	})
}

// TestHookRunsInTheBatchTransaction proves SessionEnded runs inside the
// batch's transaction: its job commits with the events, and its error rolls
// back the events, the session and the job alike.
func TestHookRunsInTheBatchTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		newClock(s, t0)
		h := newHooked(t, s)
		ctx := context.Background()
		batch := []events.Event{
			ev("a1", "session-a", events.SessionStart, -time.Minute),
			ev("a2", "session-a", events.SessionEnd, 0),
			ev("b1", "session-b", events.ToolResult, 0),
		}
		h.fail.Store(true)
		if _, err := h.svc.IngestBatch(ctx, batch, store.SourcePush); err == nil {
			t.Fatal("a failing hook did not fail the batch")
		}
		if h.ended.Load() != 1 {
			t.Fatalf("hook ran %d times, want 1", h.ended.Load())
		}
		if jobs := h.jobs(t); len(jobs) != 0 {
			t.Fatalf("the failed hook's job was committed: %v", jobs)
		}
		for _, id := range []string{"session-a", "session-b"} {
			if _, err := s.GetSession(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s survived the rollback: %v", id, err)
			}
		}
		if evs, _ := s.SessionEvents(ctx, "session-b", 10); len(evs) != 0 {
			t.Fatalf("events survived the rollback: %v", evs)
		}

		h.fail.Store(false)
		res := ingestOK(t, h.svc, batch, store.SourcePush)
		if res.Stored != 3 || !slices.Equal(h.jobs(t), []string{"session-a"}) {
			t.Fatalf("after the retry: %+v, jobs %v", res, h.jobs(t))
		}
	})
}

func TestHooksNeedAClient(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		newClock(s, t0)
		svc := ingest.New(s, ingest.Hooks{AgentError: func(context.Context, *sql.Tx, *engine.Client, events.Event) error { return nil }})
		if _, err := svc.IngestBatch(context.Background(), []events.Event{ev("x", "session-1", events.Error, 0)}, store.SourcePush); err == nil {
			t.Fatal("a hook ran without a client")
		}
		// Without hooks no client is needed.
		ingestOK(t, ingest.New(s, ingest.Hooks{}), []events.Event{ev("x", "session-1", events.Error, 0)}, store.SourcePush)
	})
}
