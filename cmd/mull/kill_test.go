package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/workflows"
)

// TestMain lets the test binary stand in for the mull binary: with
// MULL_TEST_AS_MULL=1 it runs the command line in its arguments, so tests can
// start real worker processes and kill them.
func TestMain(m *testing.M) {
	if os.Getenv("MULL_TEST_AS_MULL") == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// startMull starts the test binary as a mull process; it is killed when
// the test ends if nobody waited for it.
func startMull(t testing.TB, env []string, logFile *os.File, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "MULL_TEST_AS_MULL=1"), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A test that fails midway must not leave its worker running (and
	// loading the machine for the tests after it).
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// TestWorkflowSurvivesSIGKILL starts the demo workflow (split → 6 parts →
// join), kills the worker with SIGKILL at random points five times, restarts
// it each time, and checks the run finishes with every step succeeded once
// in effect: join's output counts every part's output exactly once.
func TestWorkflowSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills worker processes")
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			url := dbURL(db)
			ctx := context.Background()
			if code, out, errOut := mull(t, ctx, "--database-url", url, "migrate"); code != 0 {
				t.Fatalf("migrate: %d %s%s", code, out, errOut)
			}
			code, out, errOut := mull(t, ctx, "--database-url", url, "workflows", "demo", "--parts", "6", "--work", "800ms")
			if code != 0 {
				t.Fatalf("demo: %d %s%s", code, out, errOut)
			}
			runID := regexp.MustCompile(`run (wf_\w+)`).FindStringSubmatch(out)[1]

			s, err := store.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			runner := workflows.New(s, testLogger())

			env := []string{"MULL_DATABASE_URL=" + url, "MULL_LOG_FORMAT=json", "MULL_LOG_LEVEL=debug",
				"MULL_WORKERS_HEARTBEAT_INTERVAL=200ms", "MULL_WORKERS_DEAD_AFTER=2s",
				"MULL_WORKERS_FETCH_COOLDOWN=10ms", "MULL_WORKERS_FETCH_POLL_INTERVAL=50ms"}
			logFile, err := os.Create(filepath.Join(t.TempDir(), "worker.log"))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if t.Failed() {
					b, _ := os.ReadFile(logFile.Name())
					t.Logf("worker log:\n%s", b)
				}
			}()
			seed := time.Now().UnixNano()
			t.Logf("kill points seeded with %d", seed)
			rng := rand.New(rand.NewPCG(uint64(seed), 0))
			for kill := range 5 {
				w := startMull(t, env, logFile, "worker")
				waitLog(t, logFile.Name(), `"msg":"workers started"`, kill+1)
				after := time.Duration(rng.IntN(1600)) * time.Millisecond
				<-time.After(after)
				if err := w.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				_ = w.Wait()
				run, _ := runner.Get(ctx, runID)
				t.Logf("kill %d after %s: run %s", kill+1, after, summary(run))
			}
			w := startMull(t, env, logFile, "worker")
			waitLog(t, logFile.Name(), `"msg":"workers started"`, 6)
			run := waitRunDone(t, runner, runID)
			_ = w.Process.Signal(syscall.SIGTERM)
			if err := w.Wait(); err != nil {
				t.Errorf("worker exit after SIGTERM: %v", err)
			}
			if run.Status != store.WorkflowSucceeded {
				t.Fatalf("run ended %s: %s", run.Status, run.Error)
			}
			for _, st := range run.Steps {
				if st.Status != store.WorkflowStepSucceeded {
					t.Errorf("step %s ended %s", st.Name, st.Status)
				}
			}
			var join workflows.DemoOutput
			if err := json.Unmarshal(run.Steps[len(run.Steps)-1].Output, &join); err != nil {
				t.Fatal(err)
			}
			if join.Value != workflows.DemoTotal(6) {
				t.Fatalf("join output %d, want %d: a step's output was lost or counted twice", join.Value, workflows.DemoTotal(6))
			}
		})
	}
}

// waitLog waits until a line containing want appears n times in the log of
// another process.
func waitLog(t testing.TB, path, want string, n int) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := testwait.After(t)
	for {
		b, _ := os.ReadFile(path)
		if strings.Count(string(b), want) >= n {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no %d× %q in the worker log in time", n, want)
		}
	}
}

func summary(run store.WorkflowRun) string {
	done := 0
	for _, s := range run.Steps {
		if s.Status == store.WorkflowStepSucceeded {
			done++
		}
	}
	return run.Status + ", steps succeeded " + itoa(int64(done)) + "/" + itoa(int64(len(run.Steps)))
}

// waitRunDone polls another process's progress until the run leaves running.
func waitRunDone(t *testing.T, r *workflows.Runner, id string) store.WorkflowRun {
	t.Helper()
	timeout := testwait.Patience(t)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		run, err := r.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != store.WorkflowRunning {
			return run
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("run still running after %s: %s", timeout, summary(run))
		}
	}
}

func testLogger() *slogLogger { return newLogger(config.Default(), discard{}) }

type slogLogger = slog.Logger

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
