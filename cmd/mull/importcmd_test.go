package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/history"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Importing the fixture DSH home twice stores its events once; the sessions
// appear with their counts. On Postgres the import refreshes the planner's
// statistics of the tables it filled.
func TestImportDSHTwice(t *testing.T) {
	home := filepath.Join("..", "..", "..", "shared", "fixtures", "dsh", "home")
	if _, err := os.Stat(home); err != nil {
		t.Skipf("fixtures not found beside the checkout: %v", err)
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			url := dbURL(db)
			ctx := context.Background()
			base := []string{"--database-url", url}
			if code, out, errOut := mull(t, ctx, append(base, "migrate")...); code != 0 {
				t.Fatalf("migrate: %d %s%s", code, out, errOut)
			}
			code, out, errOut := mull(t, ctx, append(base, "import", "dsh", "--dsh-home", home)...)
			if code != 0 || !strings.Contains(out, "73 stored, 0 duplicates") || !strings.Contains(errOut, "files 4/4") {
				t.Fatalf("first import: %d\n%s%s", code, out, errOut)
			}
			if dialect == store.Postgres {
				s, err := store.Open(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				for _, table := range store.ImportTables {
					if !storetest.Analyzed(t, s, table) {
						t.Errorf("%s not analyzed after the import", table)
					}
				}
			}
			code, out, _ = mull(t, ctx, append(base, "import", "dsh", "--dsh-home", home)...)
			if code != 0 || !strings.Contains(out, "0 stored") {
				t.Fatalf("second import: %d\n%s", code, out)
			}
			code, out, _ = mull(t, ctx, append(base, "sessions", "list", "--workspace", "/home/dev/weather-cli")...)
			if code != 0 || !strings.Contains(out, "error=1") || !strings.Contains(out, "tool_result=2") {
				t.Fatalf("sessions list: %d\n%s", code, out)
			}
		})
	}
}

// Importing an existing DSH history stores it and starts nothing: no
// error retro at import, and the idle sweep of the next serve closes the
// imported sessions as history instead of paying a retro for each.
func TestImportDSHStartsNoLLMJob(t *testing.T) {
	home := filepath.Join("..", "..", "..", "shared", "fixtures", "dsh", "home")
	if _, err := os.Stat(home); err != nil {
		t.Skipf("fixtures not found beside the checkout: %v", err)
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			url := dbURL(storetest.Database(t, dialect))
			ctx := context.Background()
			base := []string{"--database-url", url}
			if code, out, errOut := mull(t, ctx, append(base, "migrate")...); code != 0 {
				t.Fatalf("migrate: %d %s%s", code, out, errOut)
			}
			if code, out, errOut := mull(t, ctx, append(base, "import", "dsh", "--dsh-home", home)...); code != 0 || !strings.Contains(out, "73 stored") {
				t.Fatalf("import: %d\n%s%s", code, out, errOut)
			}
			g := &globals{databaseURL: url, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
			a, err := g.open(ctx, work)
			if err != nil {
				t.Fatal(err)
			}
			defer a.close()
			n, err := a.ingest.EndIdle(ctx, a.cfg.Ingest.IdleTimeout.D())
			if err != nil {
				t.Fatal(err)
			}
			sessions, err := a.store.ListSessions(ctx, store.SessionFilter{})
			if err != nil || len(sessions) != 4 {
				t.Fatalf("sessions: %d, %v", len(sessions), err)
			}
			for _, s := range sessions {
				if s.Status == store.SessionOpen || (s.Status == store.SessionIdle && s.EndReason != history.Reason) {
					t.Errorf("session %s after the idle sweep: %s (%s)", s.ID, s.Status, s.EndReason)
				}
			}
			counts, err := a.store.JobCounts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range counts {
				if c.Queue == "llm" || strings.HasPrefix(c.Kind, "retro") || strings.HasPrefix(c.Kind, "consolidate") {
					t.Errorf("import then idle sweep (%d sessions closed) enqueued %d %s jobs on %s (%s)", n, c.N, c.Kind, c.Queue, c.State)
				}
			}
		})
	}
}

// --learn opts in to the retros an import does not start: it shows the
// sessions and the estimate, asks, and enqueues one retro per imported
// session only on yes; without a terminal it needs --yes.
func TestImportDSHLearn(t *testing.T) {
	home := filepath.Join("..", "..", "..", "shared", "fixtures", "dsh", "home")
	if _, err := os.Stat(home); err != nil {
		t.Skipf("fixtures not found beside the checkout: %v", err)
	}
	oldIn, oldTerm := importStdin, stdinIsTerminal
	t.Cleanup(func() { importStdin, stdinIsTerminal = oldIn, oldTerm })
	retros := func(t *testing.T, url string) int {
		t.Helper()
		g := &globals{databaseURL: url, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
		a, err := g.open(context.Background(), manage)
		if err != nil {
			t.Fatal(err)
		}
		defer a.close()
		counts, err := a.store.JobCounts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range counts {
			if c.Kind == "retro_session" {
				n += int(c.N)
			}
		}
		return n
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			fresh := func() []string {
				url := dbURL(storetest.Database(t, dialect))
				if code, out, errOut := mull(t, ctx, "--database-url", url, "migrate"); code != 0 {
					t.Fatalf("migrate: %d %s%s", code, out, errOut)
				}
				return []string{"--database-url", url}
			}
			learn := func(base []string, extra ...string) (int, string, string) {
				return mull(t, ctx, append(append(base, "import", "dsh", "--dsh-home", home, "--learn"), extra...)...)
			}

			// No terminal, no --yes: refused before anything is imported.
			stdinIsTerminal = func() bool { return false }
			base := fresh()
			code, out, errOut := learn(base)
			if code != 2 || !strings.Contains(errOut, "--yes") || strings.Contains(out, "stored") {
				t.Fatalf("--learn without a terminal: %d\n%s%s", code, out, errOut)
			}

			// A terminal, answered no: imported, no retro.
			stdinIsTerminal = func() bool { return true }
			importStdin = strings.NewReader("n\n")
			code, out, errOut = learn(base)
			if code != 0 || !strings.Contains(out, "73 stored") || !strings.Contains(out, "learn: 4 sessions") ||
				!strings.Contains(out, "tokens") || !strings.Contains(out, "$") || !strings.Contains(out, "[y/N]") ||
				!strings.Contains(out, "no retro enqueued") || retros(t, base[1]) != 0 {
				t.Fatalf("--learn answered n: %d\n%s%s", code, out, errOut)
			}

			// Answered yes, on a fresh database: one retro per session.
			base = fresh()
			importStdin = strings.NewReader("y\n")
			code, out, errOut = learn(base)
			if code != 0 || !strings.Contains(out, "4 retros enqueued") || retros(t, base[1]) != 4 {
				t.Fatalf("--learn answered y: %d, %d retros\n%s%s", code, retros(t, base[1]), out, errOut)
			}

			// --yes asks nothing; a second import brings no session to learn.
			stdinIsTerminal = func() bool { return false }
			code, out, errOut = learn(base, "--yes")
			if code != 0 || !strings.Contains(out, "no new primary session") || retros(t, base[1]) != 4 {
				t.Fatalf("--learn --yes again: %d\n%s%s", code, out, errOut)
			}
			base = fresh()
			code, out, errOut = learn(base, "--yes")
			if code != 0 || strings.Contains(out, "[y/N]") || retros(t, base[1]) != 4 {
				t.Fatalf("--learn --yes: %d\n%s%s", code, out, errOut)
			}
		})
	}
}
