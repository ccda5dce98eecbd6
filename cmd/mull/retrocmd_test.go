package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/jobs/probe"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestRetroRun: `mull retro run` refuses an unknown session with status 2
// and enqueues nothing; --no-wait only enqueues; without a worker it gives
// up at --timeout, saying the job stays queued; with a worker (`mull
// worker` in-process, against a scripted fake DeepSeek) it reports a failed
// first attempt and the applied retro with its tokens and cost; a second
// run is a new job that bumps instead of adding; a retro the model refuses
// exits 1, cancelled.
func TestRetroRun(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			url := dbURL(db)
			ctx := context.Background()
			if code, out, errOut := mull(t, ctx, "--database-url", url, "migrate"); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			seedRetroSessions(t, db)
			fake := fakeds.New(fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{
				{Marker: "FLAKY-ONCE", Times: 1, Fault: fakeds.FaultServerError},
				{Marker: "REFUSE-ME", Fault: fakeds.FaultBadRequest, Message: "the model refused"},
			}}})
			srv := httptest.NewServer(fake)
			t.Cleanup(func() { fake.Close(); srv.Close() })
			cfgFile := filepath.Join(t.TempDir(), "mull.toml")
			if err := os.WriteFile(cfgFile, []byte("[jobs.retro_session]\nbackoff = \"10ms\"\nmax_attempts = 2\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("MULL_LLM_BASE_URL", srv.URL)
			t.Setenv("DEEPSEEK_API_KEY", "sk-test")
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")
			base := []string{"--database-url", url, "--config", cfgFile}
			retro := func(args ...string) (int, string, string) {
				t.Helper()
				return mull(t, ctx, append(append(base, "retro", "run"), args...)...)
			}

			code, out, errOut := retro("session-nope")
			if code != 2 || !strings.Contains(errOut, `no session "session-nope"`) || out != "" {
				t.Fatalf("unknown session: exit %d\n%s%s", code, out, errOut)
			}
			if code, out, _ = mull(t, ctx, append(base, "jobs", "list", "--kind", "retro_session")...); code != 0 || !strings.Contains(out, "0 jobs") {
				t.Fatalf("an unknown session enqueued a job: exit %d\n%s", code, out)
			}

			code, out, errOut = retro("session-quiet", "--no-wait")
			first := enqueuedID(t, out)
			if code != 0 || strings.Count(out, "\n") != 1 {
				t.Fatalf("--no-wait: exit %d\n%s%s", code, out, errOut)
			}
			code, out, errOut = retro("session-quiet", "--timeout", "300ms")
			if code != 1 || enqueuedID(t, out) == first || !strings.Contains(errOut, "still available and stays queued") ||
				!strings.Contains(errOut, "no worker has taken it yet") {
				t.Fatalf("no worker: exit %d, want 1 and a second job\n%s%s", code, out, errOut)
			}

			stopWorker := startWorker(t, base)
			defer stopWorker()

			code, out, errOut = retro("session-flaky")
			for _, want := range []string{"attempt 1/2 failed", "500", "applied by job", "(attempt 2/2",
				"memories:  2 added, 0 bumped, 0 invalidated, 0 rejected", "added:     #", "handoff:   written", "playbooks: 0 stored",
				"proposal:  none stored", "cache hits), ", "over 2 calls, 1 failed", "cost:      $0.0"} {
				if code != 0 || !strings.Contains(out, want) {
					t.Fatalf("retro run: exit %d, want %q in\n%s%s", code, want, out, errOut)
				}
			}
			t.Logf("retro run output:\n%s", out)

			code, out, errOut = retro("session-flaky", "--json")
			var r retroResult
			if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
				t.Fatalf("retro run --json: exit %d, %v\n%s%s", code, err, out, errOut)
			}
			if !r.Applied || r.State != "completed" || r.Counts == nil || r.Counts.Added != 0 || r.Counts.Bumped != 2 || len(r.Counts.BumpedIDs) != 2 ||
				r.LLM.Calls != 1 || r.LLM.CacheHitTokens == 0 || r.LLM.CacheHitTokens > r.LLM.PromptTokens ||
				r.LLM.CostUSD <= 0 || r.Workspace != "/home/dev/flaky" || !strings.Contains(errOut, "enqueued as job") {
				t.Fatalf("second run %+v (counts %+v)\nstderr: %s", r, r.Counts, errOut)
			}

			code, out, errOut = retro("session-refused")
			if code != 1 || !strings.Contains(out, "cancelled after 1/2 attempts") || !strings.Contains(out, "the model refused") ||
				!strings.Contains(errOut, "was not applied") {
				t.Fatalf("refused retro: exit %d, want 1\n%s%s", code, out, errOut)
			}

			// With the worker gone, a paused queue is named as the reason
			// nothing runs.
			stopWorker()
			if code, out, errOut = mull(t, ctx, append(base, "queues", "pause", "llm")...); code != 0 {
				t.Fatalf("queues pause: exit %d\n%s%s", code, out, errOut)
			}
			code, out, errOut = retro("session-quiet", "--timeout", "300ms")
			if code != 1 || !strings.Contains(errOut, "the llm queue is paused since ") {
				t.Fatalf("paused queue: exit %d, want 1 naming the paused queue\n%s%s", code, out, errOut)
			}
		})
	}
}

// The follower prints the no-worker hint once when nobody takes the job,
// and gives up at its timeout with an exit status of 1.
func TestFollowJobHintsOnce(t *testing.T) {
	db := storetest.Database(t, store.SQLite)
	ctx := context.Background()
	if code, out, errOut := mull(t, ctx, "--database-url", dbURL(db), "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	g := &globals{databaseURL: dbURL(db), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	a, err := g.open(ctx, manage)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	res, err := a.client.Insert(ctx, probe.Args{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	changes := 0
	job, err := followJob(ctx, a, res.Job.ID, &out, followOpts{Timeout: 500 * time.Millisecond, Interval: 10 * time.Millisecond,
		HintAfter: 50 * time.Millisecond, OnChange: func(prev, cur *rivertype.JobRow) { changes++ }})
	var exit *exitError
	if job != nil || !errors.As(err, &exit) || exit.code != 1 || !strings.Contains(err.Error(), "after 500ms") {
		t.Fatalf("followJob = %v, %v; want a timeout with status 1", job, err)
	}
	if strings.Count(out.String(), noWorkerHint) != 1 || changes != 1 {
		t.Fatalf("%d changes, output:\n%s\nwant the hint once and one change (the first read)", changes, out.String())
	}

}

// progressLines reports every attempt's error, even when reads missed the
// retryable state, and the retry time when they did not.
func TestProgressLines(t *testing.T) {
	at := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	errs := []rivertype.AttemptError{{Attempt: 1, Error: "status 500:\nboom"}, {Attempt: 2, Error: "timeout"}}
	row := func(state rivertype.JobState, attempt, nerr int) *rivertype.JobRow {
		return &rivertype.JobRow{State: state, Attempt: attempt, MaxAttempts: 3, Errors: errs[:nerr], ScheduledAt: at}
	}
	for _, tc := range []struct {
		prev, cur *rivertype.JobRow
		want      string
	}{
		{nil, row(rivertype.JobStateAvailable, 0, 0), ""},
		{row(rivertype.JobStateAvailable, 0, 0), row(rivertype.JobStateRunning, 1, 0), "running, attempt 1/3"},
		{row(rivertype.JobStateRunning, 1, 0), row(rivertype.JobStateRetryable, 1, 1),
			"attempt 1/3 failed; retrying at 2026-11-29T21:00:00Z after error: status 500: boom"},
		{row(rivertype.JobStateRunning, 1, 0), row(rivertype.JobStateRunning, 3, 2),
			"attempt 1/3 failed: status 500: boom|attempt 2/3 failed: timeout|running, attempt 3/3"},
		{row(rivertype.JobStateRunning, 1, 0), row(rivertype.JobStateScheduled, 1, 0), "waiting until 2026-11-29T21:00:00Z (scheduled or snoozed)"},
		{row(rivertype.JobStateRunning, 2, 1), row(rivertype.JobStateCompleted, 2, 1), ""},
	} {
		if got := strings.Join(progressLines(tc.prev, tc.cur), "|"); got != tc.want {
			t.Errorf("progressLines(%v → %v) = %q, want %q", rowState(tc.prev), rowState(tc.cur), got, tc.want)
		}
	}
}

func rowState(j *rivertype.JobRow) string {
	if j == nil {
		return "nil"
	}
	return fmt.Sprintf("%s/%d/%d errors", j.State, j.Attempt, len(j.Errors))
}

var enqueuedRE = regexp.MustCompile(`enqueued as job (\d+): retro_session of session `)

// enqueuedID is the job id a `retro run` printed.
func enqueuedID(t *testing.T, out string) string {
	t.Helper()
	m := enqueuedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no 'enqueued as job N' line in:\n%s", out)
	}
	return m[1]
}

// startWorker runs `mull worker` in-process until the returned func (which
// may be called again) stops it.
func startWorker(t *testing.T, base []string) func() {
	t.Helper()
	wctx, cancel := context.WithCancel(context.Background())
	var log syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(wctx, append(base, "worker"), &log, &log) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("worker exited %d\n%s", code, log.String())
				}
			case <-testwait.After(t):
				t.Error("worker did not stop")
			}
		})
	}
}

// seedRetroSessions stores three ended sessions, each in its own workspace:
// a quiet one, one whose first retro call the fake fails (FLAKY-ONCE) and
// one whose retro it refuses (REFUSE-ME).
func seedRetroSessions(t *testing.T, db config.Database) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Second)
	var batch []events.Event
	for _, name := range []string{"quiet", "flaky", "refused"} {
		id, ws := "session-"+name, "/home/dev/"+name
		marker := map[string]string{"flaky": "FLAKY-ONCE ", "refused": "REFUSE-ME "}[name]
		ev := func(n int, typ events.Type, payload string) events.Event {
			return events.Event{ID: fmt.Sprintf("%s-%d", id, n), Type: typ, SessionID: id, Workspace: ws,
				Time: now.Add(time.Duration(n-10) * time.Second), Payload: json.RawMessage(payload)}
		}
		batch = append(batch,
			ev(0, events.SessionStart, `{"title":"fix the build"}`),
			ev(1, events.UserMessage, `{"text":"`+marker+`run the tests of `+name+`"}`),
			ev(2, events.ToolResult, `{"tool":"bash","command":"go test ./...","exit_code":1,"is_error":true,"output":"no required module provides package"}`),
			ev(3, events.SessionEnd, `{"reason":"completed"}`))
	}
	if _, err := ingest.New(s, ingest.Hooks{}).IngestBatch(ctx, batch, store.SourcePush); err != nil {
		t.Fatal(err)
	}
}

// `retro run` reports what the job's counts hold beyond memories: the
// memories promoted to the global library (scope both) and a handoff kept
// out because the workspace's is from a later session; --json carries both.
func TestRetroOutcomePromotedAndStaleHandoff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			_, err := s.InsertRetroRun(ctx, tx, store.RetroRun{JobID: 42, SessionID: "session-1", Workspace: "/home/dev/app",
				AppliedAt: now, Counts: `{"added":1,"bumped":0,"invalidated":0,"rejected":0,"handoff":false,"handoff_stale":true,"promoted":2}`})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		finalized := now.Add(2 * time.Second)
		job := &rivertype.JobRow{ID: 42, State: rivertype.JobStateCompleted, Attempt: 1, MaxAttempts: 5, CreatedAt: now, FinalizedAt: &finalized}
		r, err := retroOutcome(ctx, s, store.Session{ID: "session-1", Workspace: "/home/dev/app"}, job)
		if err != nil || !r.Applied || r.Counts.Promoted != 2 || !r.Counts.HandoffStale {
			t.Fatalf("outcome %+v, %v", r, err)
		}
		var out bytes.Buffer
		printRetro(&out, r)
		for _, want := range []string{"promoted:  2 to the global library", "handoff:   not stored: the workspace's is from a later session"} {
			if !strings.Contains(out.String(), want) {
				t.Fatalf("output lacks %q:\n%s", want, out.String())
			}
		}
		b, _ := json.Marshal(r)
		if !strings.Contains(string(b), `"promoted":2`) || !strings.Contains(string(b), `"handoff_stale":true`) {
			t.Fatalf("--json %s", b)
		}
	})
}
