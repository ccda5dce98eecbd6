package benchcell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mullhq/mull/benchcap"
	dshplugin "github.com/mullhq/mull/integrations/dsh"
	"github.com/mullhq/mull/learn/bench"
)

// DSHExecutor runs a cell in a real DSH headless subprocess (bench.executor
// = dsh): its own DSH_HOME and workspace, made for the cell and removed
// after it; mull's bridge plugin written into that home as 'mull dsh
// install' writes it, configured to serve the side's snapshot
// (benchSnapshot) instead of the live memory. The session log it writes
// is the cell's evidence (SessionEvidence) and is kept with the cell.
//
// DSH runs an agent that can read its own environment, so the cell gets
// none of mull's secrets: one capability (benchcap), minted for this cell,
// good while the job attempt running it runs and never past its timeout,
// is its DeepSeek key (mull's LLM proxy,
// its DEEPSEEK_BASE_URL, checks it, charges the run's budget, records the
// call under the cell's job and calls DeepSeek with mull's key) and its
// plugin's token (it reads the cell's snapshot and nothing else).
type DSHExecutor struct {
	// Command runs DSH (bench.dsh_command), split on spaces.
	Command string
	// Timeout bounds one run (bench.dsh_timeout).
	Timeout time.Duration
	// Model is the model the agent asks for (bench.dsh_model, else
	// llm.model).
	Model string
	// SelfURL is where DSH reaches mull: its plugin, and its model
	// through the proxy at SelfURL + benchcap.ProxyPath.
	SelfURL string
	// Capabilities mints the cell's capability (benchcap.Keyring).
	Capabilities Minter
	// TempDir is where cell directories go; "" is os.TempDir().
	TempDir string
	// Now is the clock the capability's expiry counts from; defaults to
	// time.Now.
	Now func() time.Time
	// Refuse, when set, fails every cell before DSH starts: this process
	// lacks the tokens a DSH cell needs (ExecutorFor). A run is refused at
	// its start without them, but a worker process with another config
	// may pick its cells up.
	Refuse error
}

// Minter mints a cell's capability.
type Minter interface {
	Mint(ctx context.Context, c benchcap.Claims) (string, error)
}

// CapabilityMargin is how long a cell's capability outlives its run's
// timeout: time for a call DSH started just before it to be answered.
const CapabilityMargin = time.Minute

// Execute runs DSH on the case's statement and maps its session log.
func (e *DSHExecutor) Execute(ctx context.Context, in Input) (Outcome, error) {
	if e.Refuse != nil {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: e.Refuse}
	}
	root, err := os.MkdirTemp(e.TempDir, "mull-bench-cell-")
	if err != nil {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: err}
	}
	defer os.RemoveAll(root)
	home, work := filepath.Join(root, "dsh-home"), filepath.Join(root, "workspace")
	extra, err := e.prepare(home, work, in.Snapshot.ID)
	if err != nil {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: fmt.Errorf("prepare the DSH home: %w", err)}
	}
	capability, err := e.mint(ctx, in)
	if err != nil {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	cmd, err := e.command(ctx, home, work, extra, capability, CellPrompt(in.Case.Statement))
	if err != nil {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: err}
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &limited{w: &stderr, n: 4096}
	runErr := cmd.Run()
	if cmd.Process != nil {
		// Whatever the agent left running in the background dies with its
		// cell: its capability ends with the job, but its process would
		// outlive it, reading the cell's files and holding its workspace.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if ctx.Err() != nil {
		return Outcome{}, &Failure{Reason: bench.Timeout, Err: fmt.Errorf("DSH ran past bench.dsh_timeout (%s): %w", e.Timeout, ctx.Err())}
	}
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: fmt.Errorf("start %q: %w", e.Command, runErr)}
	}
	log, err := FindSessionLog(home)
	if err != nil {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: fmt.Errorf("%w (exit %v; stderr %q)", err, runErr, strings.TrimSpace(stderr.String()))}
	}
	return SessionEvidence(log, runErr == nil)
}

// mint is the cell's capability: its run, side, case, iteration and
// snapshot, its job's attempt and the run's budget keys, while that
// attempt runs (benchcap.Live) and until its timeout and a margin have
// passed at most.
func (e *DSHExecutor) mint(ctx context.Context, in Input) (string, error) {
	if e.Capabilities == nil {
		return "", errors.New("no capability minter: the DSH executor is not wired to the store")
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	c := benchcap.Claims{Run: in.Run.ID, Side: in.Side, Case: in.Case.ID, Iteration: in.Iteration, Snapshot: in.Snapshot.ID,
		Job: in.JobID, Kind: in.Kind, Attempt: in.Attempt, Started: in.AttemptedAt.UnixMilli(), Workspace: in.Run.Workspace, Model: e.Model,
		Expires: now().Add(e.Timeout + CapabilityMargin).Unix()}
	tok, err := e.Capabilities.Mint(ctx, c)
	if err != nil {
		return "", fmt.Errorf("mint the cell's capability: %w", err)
	}
	return tok, nil
}

// prepare writes the cell's DSH home (the plugin and the headless
// profile's patch rows) and an extra patch for the model and plain
// session logs, and makes the workspace. It returns the extra patch's
// path.
func (e *DSHExecutor) prepare(home, work, snapshot string) (string, error) {
	plugin := filepath.Join(home, "mull")
	if err := dshplugin.WriteFiles(plugin); err != nil {
		return "", err
	}
	profile := filepath.Join(home, "profiles", "headless")
	if err := os.MkdirAll(profile, 0o755); err != nil {
		return "", err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", err
	}
	rows := dshplugin.PatchRows(dshplugin.Rows{Entry: filepath.Join(plugin, dshplugin.Entry), BaseURL: e.SelfURL,
		LogTo: "stderr", HMR: true, BenchSnapshot: snapshot})
	if err := os.WriteFile(filepath.Join(profile, "cordis.patch.yml"), []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		return "", err
	}
	extra := filepath.Join(home, "bench.patch.yml")
	return extra, os.WriteFile(extra, []byte(strings.Join(cellRows(e.Model, home), "\n")+"\n"), 0o644)
}

// cellRows are the patch rows of a cell's run besides the plugin's: the
// agent's model, and session logs written as plain JSON lines under the
// cell's home. A patch row's config replaces the profile's whole, so the
// persistence row names its root too (DSH 0.1.0-rc.8 refuses to start
// without it: "$.root missing required value").
func cellRows(model, home string) []string {
	return []string{
		"- id: agent-default-model",
		"  config: {provider: deepseek-official, model: " + quote(model) + "}",
		"- id: session-persistence-jsonl",
		"  config: {root: " + quote(filepath.Join(home, "sessions")) + ", compression: none}",
	}
}

func quote(s string) string { return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"` }

// CellPrompt is the prompt a DSH cell's agent is given: the case's
// statement behind a fixed label, so the argument never starts with "-"
// and DSH's command line cannot read a statement as its own flags (a
// markdown bullet, or "--patch …" written into a case).
func CellPrompt(statement string) string { return "Benchmark case: " + statement }

// command is the DSH headless run of one statement: bench.dsh_command,
// the headless profile, the cell's extra patch and the statement, in the
// cell's workspace, with an environment of its own (the rest of mull's is
// not DSH's business, its secrets least of all). Its process group is
// killed when ctx ends.
func (e *DSHExecutor) command(ctx context.Context, home, work, extra, capability, statement string) (*exec.Cmd, error) {
	argv := strings.Fields(e.Command)
	if len(argv) == 0 {
		return nil, errors.New("bench.dsh_command is empty")
	}
	argv = append(argv, "--profile", "headless", "--patch", extra, statement)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = work
	cmd.Env = e.env(home, capability)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// env is the DSH run's environment: the cell's home; its capability as
// DeepSeek's key and as its plugin's token (benchcap.Env), mull's LLM
// proxy as DeepSeek's URL; telemetry off; PATH and the locale from mull's
// own, and HOME pointed at the cell's directory. Neither DeepSeek's key
// nor mull's API token: the agent DSH runs can read what it is given.
func (e *DSHExecutor) env(home, capability string) []string {
	env := []string{
		"DSH_HOME=" + home,
		"HOME=" + filepath.Dir(home),
		"DEEPSEEK_API_KEY=" + capability,
		"DEEPSEEK_BASE_URL=" + strings.TrimSuffix(e.SelfURL, "/") + benchcap.ProxyPath,
		benchcap.Env + "=" + capability,
		"DSH_TELEMETRY_DISABLED=1",
	}
	for _, k := range []string{"PATH", "LANG", "LC_ALL", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// FindSessionLog is the session log a run wrote under home
// (sessions/--<cwd>--/<session>/session.jsonl, or .jsonl.zstd); a cell's
// home has one session.
func FindSessionLog(home string) (string, error) {
	var found []string
	err := filepath.WalkDir(filepath.Join(home, "sessions"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n := d.Name(); !d.IsDir() && (n == "session.jsonl" || n == "session.jsonl.zstd") {
			found = append(found, path)
		}
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && len(found) == 0:
		return "", errors.New("DSH wrote no session log")
	case err != nil:
		return "", err
	case len(found) > 1:
		return "", fmt.Errorf("DSH wrote %d session logs, expected one", len(found))
	}
	return found[0], nil
}

// limited writes at most n bytes to w and drops the rest.
type limited struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}
