package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// syncBuffer is a bytes.Buffer safe for a server goroutine to write while the
// test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mull runs one command line in-process and returns its status and output.
func mull(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut syncBuffer
	code := run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func dbURL(db config.Database) string {
	if db.Dialect == store.SQLite {
		return "sqlite:" + db.Path
	}
	return db.URL
}

func TestConfigErrorsExitTwoNamingTheKey(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "mull.toml")
	if err := os.WriteFile(bad, []byte("[[cron]]\nkind = \"probe\"\nschedule = \"every tuesday\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := mull(t, context.Background(), "--config", bad, "config", "print")
	if code != 2 || !strings.HasPrefix(stderr, "mull: config: cron[0].schedule: ") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want 2 and one line naming cron[0].schedule", code, stderr)
	}
	code, _, stderr = mull(t, context.Background(), "--database-url", "mysql://x", "migrate")
	if code != 2 || !strings.Contains(stderr, "database_url") {
		t.Fatalf("exit %d, stderr %q; want 2 naming database_url", code, stderr)
	}
	code, _, stderr = mull(t, context.Background(), "dlq", "retry")
	if code != 2 || !strings.Contains(stderr, "job ids, --kind K, or --all") {
		t.Fatalf("exit %d, stderr %q; want 2 and what to give", code, stderr)
	}
	code, _, _ = mull(t, context.Background(), "no-such-command")
	if code != 2 {
		t.Fatalf("unknown command exit %d, want 2", code)
	}
}

func TestMigrateDryRunThenApply(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			url := dbURL(storetest.Database(t, dialect))
			ctx := context.Background()
			code, out, stderr := mull(t, ctx, "--database-url", url, "migrate", "--dry-run")
			if code != 0 || !strings.Contains(out, "would apply river 001") || !strings.Contains(out, "would apply mull 001 workflows") {
				t.Fatalf("dry run: exit %d\n%s%s", code, out, stderr)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "dlq", "list")
			if dialect == store.SQLite {
				// An embedded database is migrated by the command itself.
				if code != 0 {
					t.Fatalf("dlq list on an unmigrated SQLite: exit %d, want 0\n%s", code, out)
				}
				if code, out, _ = mull(t, ctx, "--database-url", url, "migrate"); code != 0 || !strings.Contains(out, "is up to date") {
					t.Fatalf("migrate after dlq list: exit %d\n%s", code, out)
				}
				return
			}
			if code != 1 {
				t.Fatalf("dlq list on an unmigrated database: exit %d, want 1\n%s", code, out)
			}
			code, out, stderr = mull(t, ctx, "--database-url", url, "migrate")
			if code != 0 || !strings.Contains(out, "applied mull 001 workflows") {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, stderr)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "migrate")
			if code != 0 || !strings.Contains(out, "is up to date") {
				t.Fatalf("second migrate: exit %d\n%s", code, out)
			}
		})
	}
}

// TestProbeToDeadLetterAndBack runs the operator's end-to-end check: a
// failing probe lands in the dead letters with its error, retry runs it
// again, and a dry-run purge changes nothing; serve shuts down cleanly.
func TestProbeToDeadLetterAndBack(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			url := dbURL(storetest.Database(t, dialect))
			if code, out, errOut := mull(t, context.Background(), "--database-url", url, "migrate"); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")
			serveCtx, stopServe := context.WithCancel(context.Background())
			var serveLog syncBuffer
			served := make(chan int, 1)
			go func() {
				served <- run(serveCtx, []string{"--database-url", url, "--listen", "127.0.0.1:0", "serve"}, &serveLog, &serveLog)
			}()
			t.Cleanup(stopServe)
			ctx := context.Background()
			base := []string{"--database-url", url}

			code, out, stderr := mull(t, ctx, append(base, "probe", "--wait", "--timeout", "60s")...)
			if code != 0 || !strings.Contains(out, "completed") {
				t.Fatalf("probe: exit %d\n%s%s\nserve log:\n%s", code, out, stderr, serveLog.String())
			}
			code, out, stderr = mull(t, ctx, append(base, "probe", "--fail", "--wait", "--timeout", "60s")...)
			if code != 0 || !strings.Contains(out, "discarded after 2 attempts") {
				t.Fatalf("probe --fail: exit %d\n%s%s", code, out, stderr)
			}
			code, out, _ = mull(t, ctx, append(base, "dlq", "list", "--json")...)
			var letters []struct {
				ID        int64  `json:"id"`
				Kind      string `json:"kind"`
				LastError string `json:"last_error"`
			}
			if err := json.Unmarshal([]byte(out), &letters); err != nil || code != 0 {
				t.Fatalf("dlq list --json: exit %d, %v\n%s", code, err, out)
			}
			if len(letters) != 1 || letters[0].Kind != "probe" || !strings.Contains(letters[0].LastError, "failed on purpose") {
				t.Fatalf("dead letters = %+v", letters)
			}
			id := letters[0].ID

			code, out, _ = mull(t, ctx, append(base, "dlq", "purge", "--older-than", "0s", "--dry-run")...)
			if code != 0 || !strings.Contains(out, "would purge 1 dead letters") {
				t.Fatalf("purge --dry-run: exit %d\n%s", code, out)
			}
			code, out, _ = mull(t, ctx, append(base, "dlq", "show", itoa(id))...)
			if code != 0 || !strings.Contains(out, "attempt 2 at") {
				t.Fatalf("dlq show after dry-run purge: exit %d\n%s", code, out)
			}
			code, out, _ = mull(t, ctx, append(base, "dlq", "retry", itoa(id))...)
			if code != 0 || !strings.Contains(out, "retried job "+itoa(id)) {
				t.Fatalf("dlq retry: exit %d\n%s", code, out)
			}
			// The retried probe fails once more (attempt 3 of 3) and dies again.
			deadline := time.Now().Add(60 * time.Second)
			for {
				_, out, _ = mull(t, ctx, append(base, "dlq", "show", itoa(id))...)
				if strings.Contains(out, "attempt 3 at") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("retried probe did not run again:\n%s", out)
				}
				waitBriefly(serveCtx)
			}

			stopServe()
			select {
			case code := <-served:
				if code != 0 {
					t.Fatalf("serve exited %d\n%s", code, serveLog.String())
				}
			case <-testwait.After(t):
				t.Fatal("serve did not stop after its context was cancelled")
			}
			if !strings.Contains(serveLog.String(), `"msg":"stopped"`) {
				t.Fatalf("serve log lacks the stop line:\n%s", serveLog.String())
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// waitBriefly yields between polls of another process's state, without
// sleeping: a timer in a select that the test's context can cut short.
func waitBriefly(ctx context.Context) {
	t := time.NewTimer(100 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
