package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/memstatus"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The steering commands: memory status, forget by keywords, promote, and
// sessions retro.
func TestSteerCommands(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			m := cli{t, context.Background(), []string{"--database-url", dbURL(db)}}.run
			if code, out, errOut := m("migrate"); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			const ws = "/home/dev/app"
			for _, text := range []string{"the staging endpoint moved to v2", "staging endpoint moved to v2 in May", "the build uses make"} {
				if code, out, errOut := m("memory", "add", "--workspace", ws, "--kind", "fact", "--importance", "9", "--src", "user", text); code != 0 {
					t.Fatalf("add: exit %d\n%s%s", code, out, errOut)
				}
			}
			if code, out, errOut := m("memory", "add", "--workspace", ws, "--kind", "resource", "--src", "web", "a page about v2"); code != 0 {
				t.Fatalf("add web: exit %d\n%s%s", code, out, errOut)
			}

			code, out, errOut := m("memory", "status", "--workspace", ws)
			if code != 0 || !strings.Contains(out, "fact") || !strings.Contains(out, "queue (all workspaces)") || !strings.Contains(out, "budget workspace:"+ws) {
				t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
			}
			var st memstatus.Status
			code, out, _ = m("memory", "status", "--workspace", ws, "--json")
			if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Libraries[0].Totals["live"] != 4 || st.Errors.Counted {
				t.Fatalf("status --json: exit %d, %v\n%s", code, err, out)
			}

			// Without --yes and without a terminal: the matches, nothing forgotten.
			code, out, _ = m("memory", "forget", "--keywords", "staging endpoint moved", "--workspace", ws)
			if code != 0 || strings.Count(out, "staging endpoint") != 2 || !strings.Contains(out, "nothing forgotten: run again with --yes") {
				t.Fatalf("forget dry run: exit %d\n%s", code, out)
			}
			code, out, _ = m("memory", "forget", "--keywords", "staging endpoint moved", "--workspace", ws, "--yes")
			if code != 0 || !strings.Contains(out, "forgot 2 memories") {
				t.Fatalf("forget --yes: exit %d\n%s", code, out)
			}
			if code, out, _ = m("memory", "forget", "--keywords", "staging endpoint moved", "--workspace", ws, "--yes"); code != 0 || !strings.Contains(out, "no live memory") {
				t.Fatalf("forget again: exit %d\n%s", code, out)
			}
			if code, _, errOut = m("memory", "forget", "--keywords", "ab", "--workspace", ws); code != 2 || !strings.Contains(errOut, "keywords") {
				t.Fatalf("forget a short needle: exit %d\n%s", code, errOut)
			}
			if code, _, errOut = m("memory", "forget", "--keywords", "staging"); code != 2 || !strings.Contains(errOut, "--workspace") {
				t.Fatalf("forget without a workspace: exit %d\n%s", code, errOut)
			}

			// Promote: 3 is the build fact, 4 the web resource.
			var p memories.Promotion
			code, out, errOut = m("memory", "promote", "--workspace", ws, "3", "4", "--json")
			if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil || len(p.Promoted) != 1 || p.Promoted[0].ID != 3 ||
				len(p.Refused) != 1 || !strings.Contains(p.Refused[0].Reason, "external") {
				t.Fatalf("promote: exit %d, %v\n%s%s", code, err, out, errOut)
			}
			if code, out, _ = m("memory", "promote", "--workspace", ws, "3"); code != 0 || !strings.Contains(out, "has it already") {
				t.Fatalf("promote again: exit %d\n%s", code, out)
			}
			if code, out, _ = m("memory", "promote", "--workspace", "/tmp/scratch"); code != 0 || !strings.Contains(out, "temporary directory") {
				t.Fatalf("promote a temporary workspace: exit %d\n%s", code, out)
			}

			// sessions retro: queued once, then the waiting one.
			seedSessions(t, db)
			if code, out, errOut = m("sessions", "retro", "session-app"); code != 0 || !strings.Contains(out, "queued as job") {
				t.Fatalf("sessions retro: exit %d\n%s%s", code, out, errOut)
			}
			if code, out, _ = m("sessions", "retro", "session-app"); code != 0 || !strings.Contains(out, "already queued") {
				t.Fatalf("sessions retro again: exit %d\n%s", code, out)
			}
			if code, _, errOut = m("sessions", "retro", "nobody"); code != 2 || !strings.Contains(errOut, "no session") {
				t.Fatalf("sessions retro of nobody: exit %d\n%s", code, errOut)
			}
		})
	}
}
