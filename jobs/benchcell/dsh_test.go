package benchcell_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"golang.org/x/sys/unix"

	"github.com/mullhq/mull/benchcap"
	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/jobs/benchcell"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The real DSH logs at ../shared (its FORMAT.md describes them).
var fixtureSessions = filepath.Join("..", "..", "..", "shared", "fixtures", "dsh", "home", "sessions")

func fixtureLog(t *testing.T, dir, session, file string) string {
	t.Helper()
	p := filepath.Join(fixtureSessions, dir, session, file)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture log missing (the repo expects ../shared beside it): %v", err)
	}
	return p
}

var s4 = []string{"--home-dev-shop-frontend--", "session-293a9768-7a49-469f-a49b-03ee04ee1add", "session.jsonl"}

// S4's log (5 tool steps, then a summary) maps to its evidence: the last
// assistant text, each call as "tool args", each result's head, and every
// row kept, in order, as a JSON array.
func TestSessionEvidenceS4(t *testing.T) {
	out, err := benchcell.SessionEvidence(fixtureLog(t, s4[0], s4[1], s4[2]), true)
	if err != nil {
		t.Fatal(err)
	}
	ev := out.Evidence
	if !ev.Completed || !strings.HasPrefix(ev.Summary, "Added `GET /api/health`") || !strings.Contains(ev.Summary, "pnpm run typecheck") {
		t.Errorf("completed %v, summary %q: want the last assistant text", ev.Completed, ev.Summary)
	}
	want := []string{`read {"file_path":"/home/dev/shop-frontend/server/api.ts"}`, `read {"file_path":"/home/dev/shop-frontend/package.json"}`}
	if len(ev.Actions) != 5 || !slices.Equal(ev.Actions[:2], want) || ev.Actions[3] != "bash pnpm run typecheck" || ev.Actions[4] != "bash pnpm test" {
		t.Errorf("actions %q", ev.Actions)
	}
	if len(ev.Observations) != 5 || !strings.HasPrefix(ev.Observations[0], "read: <path>/home/dev/shop-frontend/server/api.ts</path>") {
		t.Errorf("observations %q", ev.Observations)
	}
	for _, o := range ev.Observations {
		if len([]rune(o)) > benchcell.ObservationRun {
			t.Errorf("observation of %d runes, want at most %d", len([]rune(o)), benchcell.ObservationRun)
		}
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Log, &rows); err != nil || len(rows) != 100 || rows[0]["type"] != "session" || rows[99]["type"] != "turn/end" {
		t.Fatalf("log: %d rows (%v), want S4's 100 as a JSON array", len(rows), err)
	}
	// Not completed when DSH exited non-zero, whatever the log says.
	if out, err := benchcell.SessionEvidence(fixtureLog(t, s4[0], s4[1], s4[2]), false); err != nil || out.Evidence.Completed {
		t.Errorf("exit 1: completed %v (%v)", out.Evidence.Completed, err)
	}
}

// The compressed logs map too: S1's failing command shows as a failed
// observation; S3's provider error, which ends its turn, as the turn's
// error.
func TestSessionEvidenceFailures(t *testing.T) {
	s1, err := benchcell.SessionEvidence(fixtureLog(t, "--home-dev-invoice-utils--", "session-618f3e2a-04f1-4c07-ae0d-228954177258", "session.jsonl.zstd"), true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(s1.Evidence.Observations, func(o string) bool { return strings.HasPrefix(o, "bash failed: ") }) {
		t.Errorf("S1 observations %q: want the failing bash command", s1.Evidence.Observations)
	}
	s3, err := benchcell.SessionEvidence(fixtureLog(t, "--home-dev-weather-cli--", "session-408c8942-fb3e-4b5d-b173-6ffaed7af3c2", "session.jsonl.zstd"), false)
	if err != nil {
		t.Fatal(err)
	}
	last := s3.Evidence.Observations[len(s3.Evidence.Observations)-1]
	if s3.Evidence.Completed || !strings.Contains(last, "turn ended in error: Internal server error: upstream model worker unavailable") {
		t.Errorf("S3: completed %v, observations %q", s3.Evidence.Completed, s3.Evidence.Observations)
	}
	if _, err := benchcell.SessionEvidence(filepath.Join(t.TempDir(), "session.jsonl"), true); !isFailure(err, bench.DSHFailed) {
		t.Errorf("missing log: %v, want dsh-failed", err)
	}
}

func isFailure(err error, reason bench.FailureReason) bool {
	var f *benchcell.Failure
	return errors.As(err, &f) && f.Reason == reason
}

// fakeDSH is a dsh_command the test writes: it records what it was run
// with (its arguments, environment, directory and the DSH home's files)
// beside itself, then behaves as its mode file says.
const fakeDSH = `#!/bin/sh
here=$(dirname "$0")
seen="$here/seen"
mkdir -p "$seen"
printf '%s\n' "$@" > "$seen/args"
env | sort > "$seen/env"
pwd > "$seen/pwd"
cp "$DSH_HOME/profiles/headless/cordis.patch.yml" "$seen/profile.yml"
cp "$DSH_HOME/bench.patch.yml" "$seen/extra.yml"
[ -f "$DSH_HOME/mull/plugin.mjs" ] && [ -d "$DSH_HOME/mull/lib" ] && echo "$DSH_HOME/mull/plugin.mjs" > "$seen/plugin"
log="$DSH_HOME/sessions/--cell--/session-1"
case $(cat "$here/mode") in
ok) mkdir -p "$log"; cp "$here/log.jsonl" "$log/session.jsonl"; echo "done"; exit 0 ;;
failed) mkdir -p "$log"; cp "$here/log.jsonl" "$log/session.jsonl"; exit 1 ;;
nolog) echo "cannot start" >&2; exit 1 ;;
hang) exec sleep 60 ;;
orphan) sleep 300 </dev/null >/dev/null 2>&1 & echo $! > "$seen/orphan"; mkdir -p "$log"; cp "$here/log.jsonl" "$log/session.jsonl"; exit 0 ;;
esac
`

type fakeCmd struct{ dir string }

func newFakeDSH(t *testing.T) fakeCmd {
	t.Helper()
	f := fakeCmd{dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(f.dir, "dsh"), []byte(fakeDSH), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fixtureLog(t, s4[0], s4[1], s4[2]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "log.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f fakeCmd) mode(t *testing.T, m string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, "mode"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f fakeCmd) seen(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "seen", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func dshInput() benchcell.Input {
	return benchcell.Input{CellInput: benches.CellInput{Run: benches.Run{ID: "bench_1", Workspace: "/w"},
		Case:     bench.Case{ID: "c1", Statement: "Add a GET /api/health endpoint; use pnpm."},
		Snapshot: bench.Snapshot{ID: "snap_cand", Kind: bench.MemorySnapshot}}, JobID: 7, Kind: "bench_cell",
		Attempt: 2, AttemptedAt: time.Date(2026, 12, 6, 7, 59, 0, 0, time.UTC)}
}

// minter records the claims it mints for, and mints "mullcap1.cell".
type minter struct{ claims []benchcap.Claims }

func (m *minter) Mint(_ context.Context, c benchcap.Claims) (string, error) {
	m.claims = append(m.claims, c)
	return "mullcap1.cell", nil
}

// The DSH executor runs dsh_command headless on the statement in a
// workspace and DSH home of the cell's own, removed after: the plugin
// written into the home with its patch rows (mull's URL, the side's
// snapshot, the hmr row), the model and plain session logs in an extra
// patch, and an environment holding the cell's capability (as DeepSeek's
// key and the plugin's token), mull's LLM proxy as DeepSeek's URL and
// telemetry off, but nothing else of mull's: not DeepSeek's real key, not
// mull's API or admin token. The capability is minted for exactly this
// cell and the job attempt running it, expiring its timeout and a margin
// from now at the latest. The session log it
// leaves is the evidence.
func TestDSHExecutorRunsHeadless(t *testing.T) {
	for k, v := range map[string]string{"MULL_ADMIN_TOKEN": "must-not-reach-dsh-admin", "MULL_API_TOKEN": "must-not-reach-dsh-api",
		"DEEPSEEK_API_KEY": "must-not-reach-dsh-key", "DEEPSEEK_BASE_URL": "http://must-not-reach-dsh.invalid"} {
		t.Setenv(k, v) // mull's real secrets: the cell's DSH must not inherit them
	}
	f := newFakeDSH(t)
	f.mode(t, "ok")
	tmp := t.TempDir()
	caps := &minter{}
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	x := &benchcell.DSHExecutor{Command: filepath.Join(f.dir, "dsh") + "  ", Timeout: time.Minute, Model: "deepseek-v4-flash",
		SelfURL: "http://127.0.0.1:7788", Capabilities: caps, TempDir: tmp, Now: func() time.Time { return now }}
	in := dshInput()
	in.Side, in.Iteration = bench.Candidate, 2
	out, err := x.Execute(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Evidence.Completed || len(out.Evidence.Actions) != 5 || len(out.Log) == 0 {
		t.Errorf("evidence %+v, log %d bytes: want S4's", out.Evidence, len(out.Log))
	}
	args := strings.Split(strings.TrimSuffix(f.seen(t, "args"), "\n"), "\n")
	if len(args) != 5 || args[0] != "--profile" || args[1] != "headless" || args[2] != "--patch" ||
		!strings.HasSuffix(args[3], "bench.patch.yml") || args[4] != "Benchmark case: Add a GET /api/health endpoint; use pnpm." {
		t.Errorf("args %q: want --profile headless --patch <extra> \"Benchmark case: <statement>\"", args)
	}
	home := strings.TrimSuffix(args[3], "/bench.patch.yml")
	env := f.seen(t, "env")
	for _, want := range []string{"DSH_HOME=" + home + "\n", "DEEPSEEK_API_KEY=mullcap1.cell\n", "DEEPSEEK_BASE_URL=http://127.0.0.1:7788/v1/llm/proxy\n",
		"MULL_BENCH_CAPABILITY=mullcap1.cell\n", "DSH_TELEMETRY_DISABLED=1\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "must-not-reach-dsh") || strings.Contains(env, "MULL_API_TOKEN") {
		t.Errorf("mull's environment leaked into DSH's:\n%s", env)
	}
	want := benchcap.Claims{Run: "bench_1", Side: bench.Candidate, Case: "c1", Iteration: 2, Snapshot: "snap_cand", Job: 7, Kind: "bench_cell",
		Attempt: 2, Started: in.AttemptedAt.UnixMilli(), Workspace: "/w", Model: "deepseek-v4-flash", Expires: now.Add(time.Minute + benchcell.CapabilityMargin).Unix()}
	if len(caps.claims) != 1 || caps.claims[0] != want {
		t.Errorf("minted %+v, want %+v", caps.claims, want)
	}
	if pwd := strings.TrimSpace(f.seen(t, "pwd")); filepath.Dir(pwd) != filepath.Dir(home) || filepath.Base(pwd) != "workspace" {
		t.Errorf("ran in %s, want the cell's workspace beside %s", pwd, home)
	}
	profile := f.seen(t, "profile.yml")
	for _, want := range []string{`name: "` + home + `/mull/plugin.mjs"`, `baseUrl: "http://127.0.0.1:7788"`, `benchSnapshot: "snap_cand"`,
		`logTo: "stderr"`, "- id: hmr"} {
		if !strings.Contains(profile, want) {
			t.Errorf("profile patch lacks %q:\n%s", want, profile)
		}
	}
	if strings.Contains(profile, "mullcap1") || strings.Contains(profile, "must-not-reach") {
		t.Errorf("a secret was written to the profile:\n%s", profile)
	}
	if got := strings.TrimSpace(f.seen(t, "plugin")); got != home+"/mull/plugin.mjs" {
		t.Errorf("plugin %q not written where the row names it", got)
	}
	extra := f.seen(t, "extra.yml")
	if !strings.Contains(extra, `model: "deepseek-v4-flash"`) || !strings.Contains(extra, `root: "`+home+`/sessions", compression: none`) {
		t.Errorf("extra patch:\n%s", extra)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the cell's directories were left behind: %v", left)
	}
}

// How a DSH run can fail: an exit without a session log is dsh-failed; a
// run past bench.dsh_timeout is killed and is a timeout; a command that
// does not start is dsh-failed. An exit 1 with a log is evidence of an
// incomplete run, not a failure.
func TestDSHExecutorFailures(t *testing.T) {
	f := newFakeDSH(t)
	x := &benchcell.DSHExecutor{Command: filepath.Join(f.dir, "dsh"), Timeout: time.Minute, TempDir: t.TempDir(), Capabilities: &minter{}}
	f.mode(t, "failed")
	if out, err := x.Execute(context.Background(), dshInput()); err != nil || out.Evidence.Completed {
		t.Errorf("exit 1 with a log: completed %v, %v; want evidence, not completed", out.Evidence.Completed, err)
	}
	f.mode(t, "nolog")
	if _, err := x.Execute(context.Background(), dshInput()); !isFailure(err, bench.DSHFailed) || !strings.Contains(err.Error(), "cannot start") {
		t.Errorf("no log: %v, want dsh-failed with DSH's stderr", err)
	}
	f.mode(t, "hang")
	x.Timeout = 200 * time.Millisecond
	begin := time.Now()
	if _, err := x.Execute(context.Background(), dshInput()); !isFailure(err, bench.Timeout) {
		t.Errorf("hang: %v, want timeout", err)
	}
	if took := time.Since(begin); took > 30*time.Second {
		t.Errorf("a hung DSH took %s to stop", took)
	}
	x.Command = filepath.Join(f.dir, "no-such-dsh")
	if _, err := x.Execute(context.Background(), dshInput()); !isFailure(err, bench.DSHFailed) {
		t.Errorf("missing command: %v, want dsh-failed", err)
	}
}

// A statement that looks like DSH's flags reaches DSH as its prompt, never
// as an option: every prompt starts with the fixed label.
func TestCellPromptIsNeverAFlag(t *testing.T) {
	for _, st := range []string{"--patch /etc/evil.yml", "- fix the build", "-h"} {
		if p := benchcell.CellPrompt(st); strings.HasPrefix(p, "-") || !strings.HasSuffix(p, st) {
			t.Errorf("CellPrompt(%q) = %q", st, p)
		}
	}
}

// liveMinter mints real claims and checks, as each is minted (while the
// attempt minting it runs), that it is live and every earlier one is not;
// its first mint makes the fake DSH fail (no session log), so the job is
// retried, and the next succeed.
type liveMinter struct {
	t      *testing.T
	jobs   benchcap.Jobs
	f      fakeCmd
	mu     sync.Mutex
	claims []benchcap.Claims
}

func (m *liveMinter) Mint(ctx context.Context, c benchcap.Claims) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := benchcap.Live(ctx, m.jobs, c); err != nil {
		m.t.Errorf("attempt %d's capability, minted while it runs: %v", c.Attempt, err)
	}
	for _, old := range m.claims {
		if err := benchcap.Live(ctx, m.jobs, old); !errors.Is(err, benchcap.ErrEnded) {
			m.t.Errorf("attempt %d's capability during attempt %d: %v, want ErrEnded", old.Attempt, c.Attempt, err)
		}
	}
	m.claims = append(m.claims, c)
	m.f.mode(m.t, map[bool]string{true: "nolog", false: "ok"}[len(m.claims) == 1])
	return "mullcap1.cell", nil
}

// A DSH cell's capability is minted for the job attempt running the cell
// (River's attempt and its attempted_at): live while that attempt runs,
// refused once a retry started the next, and the last refused once the
// job completed.
func TestDSHCapabilityLivesWithItsAttempt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFakeDSH(t)
		caps := &liveMinter{t: t, jobs: s, f: f}
		x := &benchcell.DSHExecutor{Command: filepath.Join(f.dir, "dsh"), Timeout: time.Minute, Model: "deepseek-v4-flash",
			SelfURL: "http://127.0.0.1:7788", Capabilities: caps, TempDir: t.TempDir()}
		e := startExec(t, s, nil, nil, config.JobOverride{}, x)
		job, _ := e.final(t, e.run(t, bench.Candidate))
		if job.State != rivertype.JobStateCompleted || job.Attempt != 2 {
			t.Fatalf("job %s after %d attempts (%v), want completed on the 2nd", job.State, job.Attempt, job.Errors)
		}
		caps.mu.Lock()
		defer caps.mu.Unlock()
		if len(caps.claims) != 2 || caps.claims[0].Attempt != 1 || caps.claims[1].Attempt != 2 || caps.claims[1].Job != job.ID ||
			caps.claims[1].Started != job.AttemptedAt.UnixMilli() {
			t.Fatalf("minted %+v, want attempts 1 and 2 of job %d, the 2nd started at %v", caps.claims, job.ID, job.AttemptedAt)
		}
		if err := benchcap.Live(t.Context(), s, caps.claims[1]); !errors.Is(err, benchcap.ErrEnded) ||
			!strings.Contains(err.Error(), "is no longer running (state completed)") {
			t.Errorf("the last capability after the job completed: %v", err)
		}
	})
}

// What the agent left running in the background when DSH exited dies
// with the cell: the process group is killed however the run ended.
func TestDSHExecutorKillsWhatTheAgentLeftRunning(t *testing.T) {
	f := newFakeDSH(t)
	f.mode(t, "orphan")
	x := &benchcell.DSHExecutor{Command: filepath.Join(f.dir, "dsh"), Timeout: time.Minute, TempDir: t.TempDir(), Capabilities: &minter{}}
	if _, err := x.Execute(context.Background(), dshInput()); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(f.seen(t, "orphan")))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // gone and reaped already
	}
	if err != nil {
		t.Skipf("pidfd_open: %v (kernel without pidfds)", err)
	}
	defer unix.Close(fd)
	// A pidfd is readable once its process has exited.
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, int(testDeadline(t).Milliseconds())); err != nil || n != 1 {
		_ = unix.Kill(pid, unix.SIGKILL)
		t.Fatalf("the background process %d the agent left outlived its cell (poll %d, %v)", pid, n, err)
	}
}

// testDeadline is the time left before the test's deadline, less a margin,
// or a minute without one.
func testDeadline(t *testing.T) time.Duration {
	if d, ok := t.Deadline(); ok {
		return time.Until(d) - 5*time.Second
	}
	return time.Minute
}

// A process without both tokens runs no DSH cell, whatever process started
// the run: the cell fails before DSH starts, naming what is missing.
func TestDSHExecutorRefusesWithoutTokens(t *testing.T) {
	f := newFakeDSH(t)
	for _, tc := range []struct {
		admin, api string
		want       string
	}{
		{"", "", "MULL_ADMIN_TOKEN (admin_token) or MULL_API_TOKEN (api_token)"},
		{"a", "", "no MULL_API_TOKEN (api_token),"},
		{"", "b", "no MULL_ADMIN_TOKEN (admin_token),"},
	} {
		cfg := config.Default()
		cfg.Bench.Executor, cfg.Bench.DSHCommand = config.BenchExecutorDSH, filepath.Join(f.dir, "dsh")
		cfg.AdminToken, cfg.APIToken = tc.admin, tc.api
		x, ok := benchcell.ExecutorFor(cfg, nil, &minter{}).(*benchcell.DSHExecutor)
		if !ok {
			t.Fatal("bench.executor = dsh did not give a DSH executor")
		}
		x.TempDir = t.TempDir()
		_, err := x.Execute(context.Background(), dshInput())
		if !isFailure(err, bench.DSHFailed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("admin %q, api %q: %v; want dsh-failed naming %q", tc.admin, tc.api, err, tc.want)
		}
		if entries, _ := os.ReadDir(x.TempDir); len(entries) != 0 {
			t.Errorf("admin %q, api %q: a refused cell made %d directories", tc.admin, tc.api, len(entries))
		}
	}
	cfg := config.Default()
	cfg.Bench.Executor, cfg.AdminToken, cfg.APIToken = config.BenchExecutorDSH, "a", "b"
	if x := benchcell.ExecutorFor(cfg, nil, &minter{}).(*benchcell.DSHExecutor); x.Refuse != nil {
		t.Errorf("with both tokens: %v", x.Refuse)
	}
}
