package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// storeSession stores a session of workspace with events of the types
// given (payloads by type), numbered in order, its last event at last.
func storeSession(t *testing.T, s *store.Store, id, workspace string, last time.Time, evs ...[2]string) {
	t.Helper()
	ctx := context.Background()
	err := s.InTx(ctx, func(tx *sql.Tx) error {
		sess, _, err := s.LockSession(ctx, tx, id, workspace, last.Add(-time.Hour))
		if err != nil {
			return err
		}
		rows := make([]store.Event, len(evs))
		ids := make([]string, len(evs))
		for i, e := range evs {
			ids[i] = fmt.Sprintf("%s-%d", id, i)
			rows[i] = store.Event{ID: ids[i], SessionID: id, Workspace: workspace, Type: e[0], Payload: []byte(e[1]),
				Time: last.Add(time.Duration(i-len(evs)) * time.Second), Source: store.SourcePush}
		}
		if _, err := s.InsertEvents(ctx, tx, rows); err != nil {
			return err
		}
		if err := s.NumberEvents(ctx, tx, id, 0, ids); err != nil {
			return err
		}
		sess.Events, sess.LastEventAt = int64(len(evs)), last
		return s.SaveSession(ctx, tx, &sess)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The panel's session reads: a page of sessions by activity, failed tool
// calls counted per session, a session's events paged and filtered to its
// failures, and workspaces with their sessions, memories and LLM cost.
func TestPanelSessionReads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		fail := [2]string{"tool_result", `{"tool":"bash","is_error":true}`}
		ok := [2]string{"tool_result", `{"tool":"bash","is_error":false}`}
		storeSession(t, s, "s-old", "/w/a", taskT0, ok, fail, fail)
		storeSession(t, s, "s-new", "/w/b", taskT0.Add(time.Hour), [2]string{"user_message", `{"text":"hi"}`}, ok,
			[2]string{"error", `{"message":"boom"}`}, [2]string{"turn_end", `{"turn":1,"reason":"error"}`}, [2]string{"turn_end", `{"turn":2,"reason":"completed"}`})
		storeSession(t, s, "s-a2", "/w/a", taskT0.Add(-time.Hour))

		page, err := s.PanelSessions(ctx, store.SessionPage{Limit: 2})
		if err != nil || len(page) != 2 || page[0].ID != "s-new" || page[1].ID != "s-old" {
			t.Fatalf("first page %+v, %v", page, err)
		}
		page, err = s.PanelSessions(ctx, store.SessionPage{Workspace: "/w/a", Limit: 1, Offset: 1})
		if err != nil || len(page) != 1 || page[0].ID != "s-a2" {
			t.Fatalf("second page of /w/a %+v, %v", page, err)
		}
		fails, err := s.SessionToolFailures(ctx, []string{"s-old", "s-new", "s-a2"})
		if err != nil || len(fails) != 1 || fails["s-old"] != 2 {
			t.Fatalf("tool failures %v, %v", fails, err)
		}

		evs, total, err := s.PanelEvents(ctx, store.EventPage{SessionID: "s-new", Limit: 2, Offset: 1})
		if err != nil || total != 5 || len(evs) != 2 || evs[0].Seq != 2 || evs[1].Seq != 3 {
			t.Fatalf("events page %+v (%d), %v", evs, total, err)
		}
		evs, total, err = s.PanelEvents(ctx, store.EventPage{SessionID: "s-new", Failures: true})
		if err != nil || total != 2 || evs[0].Type != "error" || evs[1].Type != "turn_end" {
			t.Fatalf("failures %+v (%d), %v", evs, total, err)
		}
		evs, total, err = s.PanelEvents(ctx, store.EventPage{SessionID: "s-old", Failures: true, From: 2, To: 3})
		if err != nil || total != 1 || evs[0].Seq != 3 {
			t.Fatalf("failures in (2, 3] %+v (%d), %v", evs, total, err)
		}
		evs, _, err = s.PanelEvents(ctx, store.EventPage{SessionID: "s-new", Types: []string{"user_message"}})
		if err != nil || len(evs) != 1 || evs[0].Type != "user_message" {
			t.Fatalf("by type %+v, %v", evs, err)
		}

		live := insertLesson(t, s, store.Memory{Workspace: "/w/a", Kind: "fact", Text: "a fact", JobID: 7})
		gone := insertLesson(t, s, store.Memory{Workspace: "/w/a", Kind: "fact", Text: "an old fact"})
		if _, err := s.InvalidateMemory(ctx, s.DB, gone, taskT0, "replaced", live); err != nil {
			t.Fatal(err)
		}
		insertLesson(t, s, store.Memory{Workspace: "/w/c", Kind: "fact", Text: "c's fact"})
		insertLesson(t, s, store.Memory{Workspace: "", Kind: "fact", Text: "global"})
		for _, c := range []store.LLMCall{{JobID: 7, Kind: "retro_session", Workspace: "/w/a", CostNanoUSD: 300, Outcome: "ok"},
			{JobID: 8, Kind: "reflect_task", Workspace: "/w/a", CostNanoUSD: 200, Outcome: "ok"}} {
			if err := s.InsertLLMCall(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if one, err := s.PanelWorkspaces(ctx, "/w/c", 10, 0); err != nil || len(one) != 1 || one[0].Workspace != "/w/c" {
			t.Fatalf("workspace /w/c %+v, %v", one, err)
		}
		ws, err := s.PanelWorkspaces(ctx, "", 10, 0)
		if err != nil || len(ws) != 3 {
			t.Fatalf("workspaces %+v, %v", ws, err)
		}
		b, a, c := ws[0], ws[1], ws[2]
		if b.Workspace != "/w/b" || b.Sessions != 1 || !b.LastEventAt.Equal(taskT0.Add(time.Hour)) || a.Workspace != "/w/a" ||
			a.Sessions != 2 || a.Memories != 1 || a.MemoriesAll != 2 || a.LLMCalls != 2 || a.CostNanoUSD != 500 ||
			c.Workspace != "/w/c" || c.Sessions != 0 || !c.LastEventAt.IsZero() || c.Memories != 1 {
			t.Fatalf("workspaces %+v", ws)
		}

		mems, err := s.MemoriesOfJobs(ctx, []int64{7}, 0)
		if err != nil || len(mems) != 2 || mems[0].ID != live || mems[1].ID != gone {
			t.Fatalf("memories of job 7 %+v, %v", mems, err)
		}
		calls, err := s.LLMCallsOfJobs(ctx, []int64{7, 8, 9}, 0)
		if err != nil || len(calls) != 2 || calls[0].JobID != 7 {
			t.Fatalf("calls of jobs %+v, %v", calls, err)
		}
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			_, err := s.InsertRetroRun(ctx, tx, store.RetroRun{JobID: 7, SessionID: "s-old", Workspace: "/w/a", AppliedAt: taskT0, Counts: `{"added":1}`})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		runs, err := s.SessionRetroRuns(ctx, "s-old", 0)
		if err != nil || len(runs) != 1 || runs[0].JobID != 7 || runs[0].Counts != `{"added":1}` {
			t.Fatalf("retro runs %+v, %v", runs, err)
		}
	})
}
