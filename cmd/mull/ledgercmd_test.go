package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// seedLedger records two facts in /w through the service, as the plugin
// would (a failed bash call, then its repeat, and a read of a missing
// file), then closes the store so the CLI has the database. It returns
// the command fact's id.
func seedLedger(t *testing.T, db config.Database) int64 {
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
	svc := negledger.New(s, config.Default().Ledger, newLogger(config.Default(), &strings.Builder{}))
	exit := 2
	var factID int64
	for _, id := range []string{"call-1", "call-2"} {
		out, err := svc.Observe(ctx, negledger.ObserveRequest{Call: negledger.Call{ToolCallID: id, Tool: "bash",
			Args: map[string]any{"command": "make test"}, Cwd: "/w", Session: "session-1", Workspace: "/w"},
			Outcome: negledger.Outcome{Status: negledger.Failed, ExitCode: &exit}})
		if err != nil {
			t.Fatal(err)
		}
		factID = out.FactID
	}
	if _, err := svc.Observe(ctx, negledger.ObserveRequest{Call: negledger.Call{ToolCallID: "call-3", Tool: "read",
		Args: map[string]any{"file_path": "notes.md"}, Cwd: "/w", Session: "session-1", Workspace: "/w"},
		Outcome: negledger.Outcome{Status: negledger.Failed, ErrorCode: "FS_NOT_FOUND"}}); err != nil {
		t.Fatal(err)
	}
	return factID
}

func TestLedgerCommands(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			url := dbURL(db)
			ctx := context.Background()
			id := seedLedger(t, db)
			ref := strconv.FormatInt(id, 10)
			code, out, errOut := mull(t, ctx, "--database-url", url, "ledger", "list")
			if code != 0 || !strings.Contains(out, "ID") || !strings.Contains(out, "command exited 2 (bash)") ||
				!strings.Contains(out, "file does not exist: notes.md") || strings.Contains(out, "make test") {
				t.Fatalf("ledger list: exit %d\n%s%s", code, out, errOut)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "ledger", "list", "--workspace", "/w", "--status", "active", "--json")
			var facts []struct {
				ID     int64  `json:"id"`
				Kind   string `json:"kind"`
				Status string `json:"status"`
			}
			if err := json.Unmarshal([]byte(out), &facts); code != 0 || err != nil || len(facts) != 2 {
				t.Fatalf("list --json: exit %d, %v\n%s", code, err, out)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "ledger", "show", ref)
			var fact struct {
				ID      int64 `json:"id"`
				Savings struct {
					Duplicates int64 `json:"duplicate_failures_observed"`
				} `json:"savings"`
			}
			if err := json.Unmarshal([]byte(out), &fact); code != 0 || err != nil || fact.ID != id || fact.Savings.Duplicates != 1 {
				t.Fatalf("show: exit %d, %v\n%s", code, err, out)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "ledger", "stats", "--workspace", "/w")
			if code != 0 || !strings.Contains(out, "duplicate failures observed: 1\nwarnings emitted: ") ||
				!strings.Contains(out, "calls denied: 0") || strings.Contains(strings.ToLower(out), "token") {
				t.Fatalf("stats: exit %d\n%s", code, out)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "ledger", "stale")
			if code != 0 || !strings.Contains(out, "no stale facts") {
				t.Fatalf("stale: exit %d\n%s", code, out)
			}
			if code, _, errOut = mull(t, ctx, "--database-url", url, "ledger", "resolve", ref); code != 2 || !strings.Contains(errOut, "--reason") {
				t.Fatalf("resolve without a reason: exit %d, %s", code, errOut)
			}
			code, out, errOut = mull(t, ctx, "--database-url", url, "ledger", "resolve", ref, "--reason", "the Makefile was fixed")
			if code != 0 || !strings.Contains(out, "fact "+ref+" resolved") {
				t.Fatalf("resolve: exit %d\n%s%s", code, out, errOut)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "ledger", "show", ref)
			if code != 0 || !strings.Contains(out, `"status": "resolved"`) || !strings.Contains(out, "the Makefile was fixed") {
				t.Fatalf("show after resolve: exit %d\n%s", code, out)
			}
			if code, _, errOut = mull(t, ctx, "--database-url", url, "ledger", "show", "999"); code != 1 || !strings.Contains(errOut, "no fact with id 999") {
				t.Fatalf("show of an unknown fact: exit %d, %s", code, errOut)
			}
			if code, _, errOut = mull(t, ctx, "--database-url", url, "ledger", "show", "L3"); code != 2 {
				t.Fatalf("show L3: exit %d, %s", code, errOut)
			}
		})
	}
}

// A bad [ledger] value stops mull at start: exit 2, one line naming it.
func TestLedgerConfigErrorExitsTwo(t *testing.T) {
	t.Setenv("MULL_LEDGER_MODE", "deny")
	code, _, stderr := mull(t, context.Background(), "config", "print")
	if code != 2 || !strings.Contains(stderr, "ledger.mode") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want 2 and one line naming ledger.mode", code, stderr)
	}
}
