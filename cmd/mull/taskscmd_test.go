package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/tasks"
)

// seedTasks opens two tasks in session-1 of /w (agent mode, so no job is
// needed), closes the first as failed and reflects on it, then closes the
// store so the CLI has the database. It returns the two ids.
func seedTasks(t *testing.T, db config.Database) (string, string) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx, false); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Reflection.Mode = config.ReflectAgent
	mem := memories.New(s, cfg.Memory, cfg.Digest)
	svc := tasks.New(s, mem, ingest.New(s, ingest.Hooks{}), cfg.Reflection)
	first, err := svc.Open(ctx, tasks.OpenRequest{SessionID: "session-1", Workspace: "/w", Goal: "fix the lockfile", ExpectedResult: "npm ci passes"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Close(ctx, first.Task.ID, "failed", "npm still rewrites it"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Reflect(ctx, first.Task.ID, []byte(`{"assessment":"npm rewrote a pnpm lockfile","lessons":[
		{"relation":"new","kind":"failure","problem":"npm install rewrote the pnpm lockfile","avoid":"npm install in a pnpm repo"},
		{"relation":"repeat","target_id":999}]}`)); err != nil {
		t.Fatal(err)
	}
	second, err := svc.Open(ctx, tasks.OpenRequest{SessionID: "session-1", Workspace: "/w", Goal: "ship it", ExpectedResult: "released"})
	if err != nil {
		t.Fatal(err)
	}
	return first.Task.ID, second.Task.ID
}

func TestTasksListAndShow(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			url := dbURL(db)
			ctx := context.Background()
			closed, open := seedTasks(t, db)
			code, out, errOut := mull(t, ctx, "--database-url", url, "tasks", "list")
			if code != 0 || !strings.Contains(out, closed) || !strings.Contains(out, open) || !strings.Contains(out, "by agent") ||
				!strings.Contains(out, "fix the lockfile") {
				t.Fatalf("tasks list: exit %d\n%s%s", code, out, errOut)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "tasks", "list", "--status", "closed", "--session", "session-1", "--json")
			var list []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			}
			if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 1 || list[0].ID != closed || list[0].Status != "failed" {
				t.Fatalf("list --status closed --json: exit %d, %v\n%s", code, err, out)
			}
			code, out, errOut = mull(t, ctx, "--database-url", url, "tasks", "show", closed)
			if code != 0 || !strings.Contains(out, "task "+closed+"  failed") || !strings.Contains(out, "DECISION ENVIRONMENT") ||
				!strings.Contains(out, "reflected by agent") || !strings.Contains(out, "lessons[0] new: stored as L") ||
				!strings.Contains(out, "lessons[1] repeat: refused, target: L999 does not exist") {
				t.Fatalf("tasks show: exit %d\n%s%s", code, out, errOut)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "tasks", "show", closed, "--json")
			var detail struct {
				Task struct {
					ID string `json:"id"`
				} `json:"task"`
				Environment struct {
					Count *int `json:"count"`
				} `json:"environment"`
				Reflections []struct {
					LessonsRecorded int `json:"lessons_recorded"`
				} `json:"reflections"`
			}
			if err := json.Unmarshal([]byte(out), &detail); code != 0 || err != nil || detail.Task.ID != closed ||
				detail.Environment.Count == nil || len(detail.Reflections) != 1 || detail.Reflections[0].LessonsRecorded != 1 {
				t.Fatalf("show --json: exit %d, %v\n%s", code, err, out)
			}
			if code, _, errOut = mull(t, ctx, "--database-url", url, "tasks", "show", "task-nope"); code != 1 || !strings.Contains(errOut, `no task "task-nope"`) {
				t.Fatalf("show of an unknown task: exit %d, %s", code, errOut)
			}
			for _, args := range [][]string{{"list", "--status", "done"}, {"list", "--limit", "0"}, {"show"}} {
				if code, _, errOut = mull(t, ctx, append([]string{"--database-url", url, "tasks"}, args...)...); code != 2 {
					t.Fatalf("tasks %v: exit %d, want 2 (%s)", args, code, errOut)
				}
			}
		})
	}
}

// A bad reflection key stops mull at start: exit 2, one line naming it.
func TestReflectionConfigErrorExitsTwo(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "mull.toml")
	if err := os.WriteFile(bad, []byte("[reflection]\nmode = \"sometimes\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := mull(t, context.Background(), "--config", bad, "tasks", "list")
	if code != 2 || !strings.HasPrefix(stderr, "mull: config: reflection.mode: ") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want 2 and one line naming reflection.mode", code, stderr)
	}
}
