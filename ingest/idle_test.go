package ingest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestEndIdle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		clk := newClock(s, t0)
		h := newHooked(t, s)
		ctx := context.Background()
		ingestOK(t, h.svc, []events.Event{
			ev("q1", "session-quiet", events.ToolResult, -40*time.Minute),
			ev("b1", "session-busy", events.ToolResult, -10*time.Minute),
			ev("d1", "session-done", events.ToolResult, -50*time.Minute),
			ev("d2", "session-done", events.SessionEnd, -45*time.Minute),
		}, store.SourcePush)
		h.ended.Store(0)
		before := h.jobs(t)

		n, err := h.svc.EndIdle(ctx, 30*time.Minute)
		if err != nil || n != 1 {
			t.Fatalf("EndIdle: %d, %v; want 1 session", n, err)
		}
		quiet := session(t, s, "session-quiet")
		if quiet.Status != store.SessionIdle || quiet.EndReason != "idle" || quiet.EndedAt == nil || !quiet.EndedAt.Equal(t0) {
			t.Fatalf("quiet session: %s, %q, ended %v", quiet.Status, quiet.EndReason, quiet.EndedAt)
		}
		if st := session(t, s, "session-busy").Status; st != store.SessionOpen {
			t.Fatalf("busy session is %s", st)
		}
		if h.ended.Load() != 1 || !slices.Equal(h.jobs(t), append(before, "session-quiet")) {
			t.Fatalf("hook: %d calls, jobs %v", h.ended.Load(), h.jobs(t))
		}
		if n, _ := h.svc.EndIdle(ctx, 30*time.Minute); n != 0 {
			t.Fatalf("second sweep ended %d", n)
		}

		// A late event older than the last one leaves it idle; a
		// session_end among late events records the real end without
		// running the hook again.
		ingestOK(t, h.svc, []events.Event{ev("q0", "session-quiet", events.UserMessage, -45*time.Minute)}, store.SourceImport)
		if st := session(t, s, "session-quiet"); st.Status != store.SessionIdle || st.Events != 2 {
			t.Fatalf("after an older late event: %s with %d events", st.Status, st.Events)
		}
		// A newer event reopens it; silent again, it goes idle again.
		ingestOK(t, h.svc, []events.Event{ev("q2", "session-quiet", events.ToolResult, -time.Minute)}, store.SourcePush)
		if st := session(t, s, "session-quiet"); st.Status != store.SessionOpen || st.EndedAt != nil || st.EndReason != "" {
			t.Fatalf("after a newer event: %+v", st)
		}
		clk.set(t0.Add(time.Hour))
		n, err = h.svc.EndIdle(ctx, 30*time.Minute)
		if err != nil || n != 2 { // quiet again, and busy
			t.Fatalf("sweep an hour later: %d, %v; want 2", n, err)
		}
		if h.ended.Load() != 3 {
			t.Fatalf("hook calls %d, want 3", h.ended.Load())
		}
		ingestOK(t, h.svc, []events.Event{ev("b-end", "session-busy", events.SessionEnd, -9*time.Minute)}, store.SourcePush)
		if st := session(t, s, "session-busy"); st.Status != store.SessionEnded || st.EndReason != "completed" || h.ended.Load() != 3 {
			t.Fatalf("idle then its session_end: %s (%s), hook calls %d", st.Status, st.EndReason, h.ended.Load())
		}

		// A failing hook keeps the session open for the next sweep.
		ingestOK(t, h.svc, []events.Event{ev("z", "session-z", events.ToolResult, 0)}, store.SourcePush)
		clk.set(t0.Add(2 * time.Hour))
		h.fail.Store(true)
		if _, err := h.svc.EndIdle(ctx, 30*time.Minute); err == nil {
			t.Fatal("EndIdle hid a hook's error")
		}
		if st := session(t, s, "session-z").Status; st != store.SessionOpen {
			t.Fatalf("session-z is %s after its hook failed", st)
		}
		if _, err := h.svc.EndIdle(ctx, 0); err == nil {
			t.Fatal("EndIdle accepted a zero timeout")
		}
	})
}
