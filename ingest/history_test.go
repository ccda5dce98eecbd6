package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/history"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestImportIsHistory: sessions mull only imported, or whose last event is
// older than learn.max_session_age, run no hook: not at their end, not for
// their errors, not when the idle sweep closes them (it marks them
// "historical" instead).
func TestImportIsHistory(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		clk := newClock(s, t0)
		h := newHookedAge(t, s, 24*time.Hour)
		ctx := context.Background()
		// Imported: a finished session with an error, and one left open.
		ingestOK(t, h.svc, []events.Event{
			ev("i1", "session-imp-done", events.ToolResult, -3*time.Hour),
			ev("i2", "session-imp-done", events.Error, -2*time.Hour),
			ev("i3", "session-imp-done", events.SessionEnd, -2*time.Hour),
			ev("o1", "session-imp-open", events.Error, -time.Hour),
		}, store.SourceImport)
		// Pushed, but two days old (a plugin's backlog after a long outage).
		clk.set(t0.Add(48 * time.Hour))
		ingestOK(t, h.svc, []events.Event{
			ev("p1", "session-old-push", events.Error, -time.Minute),
			ev("p2", "session-old-open", events.ToolResult, -time.Minute),
		}, store.SourcePush)
		if n, e := h.ended.Load(), h.errors.Load(); n != 0 || e != 0 || len(h.jobs(t)) != 0 {
			t.Fatalf("history ran hooks: %d ends, %d errors, jobs %v", n, e, h.jobs(t))
		}
		if st := session(t, s, "session-imp-done"); st.Status != store.SessionEnded {
			t.Fatalf("imported end not stored: %+v", st)
		}

		// The idle sweep closes the open ones as history, without hooks.
		n, err := h.svc.EndIdle(ctx, 30*time.Minute)
		if err != nil || n != 3 {
			t.Fatalf("EndIdle: %d, %v; want 3", n, err)
		}
		for _, id := range []string{"session-imp-open", "session-old-push", "session-old-open"} {
			if st := session(t, s, id); st.Status != store.SessionIdle || st.EndReason != history.Reason {
				t.Fatalf("%s: %s (%q), want idle (historical)", id, st.Status, st.EndReason)
			}
		}
		if h.ended.Load() != 0 || len(h.jobs(t)) != 0 {
			t.Fatalf("idle sweep ran %d hooks, jobs %v", h.ended.Load(), h.jobs(t))
		}

		// A live session still learns: pushed now, its error and end run
		// the hooks; one only imported recently, going idle, does not.
		ingestOK(t, h.svc, []events.Event{
			ev("l1", "session-live", events.Error, time.Hour+48*time.Hour),
			ev("l2", "session-live", events.SessionEnd, time.Hour+48*time.Hour),
		}, store.SourcePush)
		if h.ended.Load() != 1 || h.errors.Load() != 1 {
			t.Fatalf("live session: %d ends, %d errors; want 1 and 1", h.ended.Load(), h.errors.Load())
		}
		clk.set(t0.Add(50 * time.Hour))
		ingestOK(t, h.svc, []events.Event{ev("r1", "session-imp-recent", events.ToolResult, 49*time.Hour)}, store.SourceImport)
		ingestOK(t, h.svc, []events.Event{ev("q1", "session-push-quiet", events.ToolResult, 49*time.Hour)}, store.SourcePush)
		if n, err := h.svc.EndIdle(ctx, 30*time.Minute); err != nil || n != 2 {
			t.Fatalf("EndIdle: %d, %v; want 2", n, err)
		}
		if st := session(t, s, "session-imp-recent"); st.EndReason != history.Reason {
			t.Fatalf("recent imported session: %q", st.EndReason)
		}
		if st := session(t, s, "session-push-quiet"); st.EndReason != "idle" || h.ended.Load() != 2 {
			t.Fatalf("pushed quiet session: %q, %d ends", st.EndReason, h.ended.Load())
		}
	})
}
