package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// mull memory uses and mull playbooks uses print the rows behind a
// memory's uses (a duplicate write, two searches) and a playbook's (3
// uses, 2 successes, 1 fail), with what the log does not list.
func TestUsesCommands(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Database(t, dialect)
			url := dbURL(db)
			if code, out, errOut := mull(t, ctx, "--database-url", url, "migrate"); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			s, err := store.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			run := func(args ...string) (int, string, string) {
				t.Helper()
				return mull(t, ctx, append([]string{"--database-url", url}, args...)...)
			}
			for _, args := range [][]string{
				{"memory", "add", "--workspace", "/home/dev/app", "--kind", "fact", "the build uses make"},
				{"memory", "add", "--workspace", "/home/dev/app", "--kind", "fact", "the build uses make"},
				{"memory", "search", "--use", "--workspace", "/home/dev/app", "make"},
				{"memory", "search", "--use", "--workspace", "/home/dev/app", "make"},
				{"memory", "search", "--workspace", "/home/dev/app", "make"}, // a peek: no use
			} {
				if code, out, errOut := run(args...); code != 0 {
					t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
				}
			}
			code, out, errOut := run("memory", "uses", "1")
			if code != 0 || !strings.HasPrefix(out, "memory 1: 3 uses\n") || strings.Count(out, " search ") != 2 || strings.Count(out, " write ") != 1 ||
				!strings.Contains(out, "panel") {
				t.Fatalf("memory uses: exit %d\n%s%s", code, out, errOut)
			}
			code, out, _ = run("memory", "uses", "1", "--limit", "2", "--json")
			var mu memories.MemoryUses
			if err := json.Unmarshal([]byte(out), &mu); code != 0 || err != nil || len(mu.Rows) != 2 || mu.Next != 2 || mu.Uses.Total != 3 {
				t.Fatalf("memory uses --json: exit %d, %v\n%s", code, err, out)
			}
			if code, _, errOut = run("memory", "uses", "99"); code != 1 || !strings.Contains(errOut, "no memory 99") {
				t.Fatalf("unknown memory: exit %d\n%s", code, errOut)
			}

			// Three uses of release and one of bisect, as the API records
			// them.
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				for _, slug := range []string{"release", "bisect"} {
					if err := s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/home/dev/app", Slug: slug, Steps: []string{"tag"}, UpdatedAt: s.Now()}); err != nil {
						return err
					}
				}
				for _, u := range []struct {
					slug string
					ok   bool
				}{{"release", true}, {"release", true}, {"release", false}, {"bisect", false}} {
					if _, err := s.UsePlaybook(ctx, tx, store.PlaybookUse{Workspace: "/home/dev/app", Slug: u.slug, Success: u.ok,
						ReportedBy: store.PlaybookByAgent, SessionID: "session-9"}); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for args, want := range map[string]string{
				"":        "playbook release of /home/dev/app: 3 uses\n",
				"success": "playbook release of /home/dev/app: 2 successes\n",
				"fail":    "playbook release of /home/dev/app: 1 fails\n",
			} {
				cmd := []string{"playbooks", "uses", "--workspace", "/home/dev/app", "--slug", "release"}
				if args != "" {
					cmd = append(cmd, "--outcome", args)
				}
				code, out, errOut := run(cmd...)
				rows := strings.Count(out, "\n") - 2 // the totals and the header
				if code != 0 || !strings.HasPrefix(out, want) || rows != map[string]int{"": 3, "success": 2, "fail": 1}[args] {
					t.Fatalf("%v: exit %d, %d rows\n%s%s", cmd, code, rows, out, errOut)
				}
			}
			code, out, _ = run("playbooks", "uses", "--workspace", "/home/dev/app", "--json")
			var pu memories.PlaybookUses
			if err := json.Unmarshal([]byte(out), &pu); code != 0 || err != nil || len(pu.Rows) != 4 || pu.Uses.Total != 4 ||
				pu.Rows[0].Slug != "bisect" || pu.Rows[0].SessionID != "session-9" {
				t.Fatalf("playbooks uses --json: exit %d, %v\n%s", code, err, out)
			}
			if code, _, errOut = run("playbooks", "uses", "--workspace", "/home/dev/app", "--outcome", "maybe"); code != 2 || !strings.Contains(errOut, "outcome") {
				t.Fatalf("bad outcome: exit %d\n%s", code, errOut)
			}
		})
	}
}
