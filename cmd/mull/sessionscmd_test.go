package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestSessionsListAndShow(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			url := dbURL(db)
			ctx := context.Background()
			// SQLite migrates itself; PostgreSQL waits for 'mull migrate'.
			if code, out, errOut := mull(t, ctx, "--database-url", url, "sessions", "list"); dialect == store.Postgres && (code != 1 || !strings.Contains(errOut, "pending migrations")) ||
				dialect == store.SQLite && (code != 0 || out != "no sessions\n") {
				t.Fatalf("list before migrate: exit %d\n%s%s", code, out, errOut)
			}
			if code, out, errOut := mull(t, ctx, "--database-url", url, "migrate"); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			seedSessions(t, db)

			code, out, errOut := mull(t, ctx, "--database-url", url, "sessions", "list")
			if code != 0 || !strings.Contains(out, "session-app") || !strings.Contains(out, "session-lib") ||
				!strings.Contains(out, "error=1 session_end=1 session_start=1 tool_result=2") {
				t.Fatalf("sessions list: exit %d\n%s%s", code, out, errOut)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "sessions", "list", "--workspace", "/home/dev/app", "--json")
			var list []store.Session
			if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 1 {
				t.Fatalf("list --workspace --json: exit %d, %v\n%s", code, err, out)
			}
			if s := list[0]; s.ID != "session-app" || s.Status != store.SessionEnded || s.Events != 5 || s.Counts["tool_result"] != 2 ||
				!s.FirstEventAt.Before(s.LastEventAt) {
				t.Fatalf("session-app: %+v", s)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "sessions", "list", "--status", "open", "--json")
			if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 1 || list[0].ID != "session-lib" {
				t.Fatalf("list --status open: exit %d, %v\n%s", code, err, out)
			}
			if code, out, _ = mull(t, ctx, "--database-url", url, "sessions", "list", "--workspace", "/nowhere"); code != 0 || out != "no sessions\n" {
				t.Fatalf("list of an empty workspace: exit %d\n%s", code, out)
			}

			code, out, errOut = mull(t, ctx, "--database-url", url, "sessions", "show", "session-app")
			if code != 0 || !strings.Contains(out, "status ended") || !strings.Contains(out, "title fix the build") ||
				!strings.Contains(out, "ended ") || !strings.Contains(out, "provider timeout") || strings.Count(out, "push") != 5 {
				t.Fatalf("sessions show: exit %d\n%s%s", code, out, errOut)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "sessions", "show", "session-app", "--events", "2", "--json")
			var detail struct {
				store.Session
				LastEvents []store.Event `json:"last_events"`
			}
			if err := json.Unmarshal([]byte(out), &detail); code != 0 || err != nil || detail.ID != "session-app" ||
				len(detail.LastEvents) != 2 || detail.LastEvents[1].Type != "session_end" {
				t.Fatalf("show --json: exit %d, %v\n%s", code, err, out)
			}

			if code, _, errOut = mull(t, ctx, "--database-url", url, "sessions", "show", "session-nope"); code != 1 || !strings.Contains(errOut, `no session "session-nope"`) {
				t.Fatalf("show of an unknown session: exit %d, %s", code, errOut)
			}
			for _, args := range [][]string{{"list", "--status", "asleep"}, {"list", "--limit", "0"}, {"show"}, {"show", "x", "--events", "0"}} {
				if code, _, errOut = mull(t, ctx, append([]string{"--database-url", url, "sessions"}, args...)...); code != 2 {
					t.Fatalf("sessions %v: exit %d, want 2 (%s)", args, code, errOut)
				}
			}
		})
	}
}

// seedSessions stores an ended session in /home/dev/app and an open one in
// /home/dev/lib, then closes the store so the CLI has the database.
func seedSessions(t *testing.T, db config.Database) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Second)
	ev := func(id, session, ws string, typ events.Type, ago time.Duration, payload string) events.Event {
		return events.Event{ID: id, Type: typ, SessionID: session, Workspace: ws, Time: now.Add(-ago), Payload: json.RawMessage(payload)}
	}
	batch := []events.Event{
		ev("a1", "session-app", "/home/dev/app", events.SessionStart, 9*time.Minute, `{"title":"fix the build"}`),
		ev("a2", "session-app", "/home/dev/app", events.ToolResult, 8*time.Minute, `{"tool":"bash","exit_code":1,"is_error":true}`),
		ev("a3", "session-app", "/home/dev/app", events.Error, 7*time.Minute, `{"message":"provider timeout"}`),
		ev("a4", "session-app", "/home/dev/app", events.ToolResult, 6*time.Minute, `{"tool":"bash","exit_code":0,"is_error":false}`),
		ev("a5", "session-app", "/home/dev/app", events.SessionEnd, 5*time.Minute, `{"reason":"completed"}`),
		ev("l1", "session-lib", "/home/dev/lib", events.UserMessage, time.Minute, `{"text":"hello"}`),
	}
	if _, err := ingest.New(s, ingest.Hooks{}).IngestBatch(ctx, batch, store.SourcePush); err != nil {
		t.Fatal(err)
	}
}
