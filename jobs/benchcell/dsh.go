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

	dshplugin "github.com/mullhq/mull/integrations/dsh"
	"github.com/mullhq/mull/learn/bench"
)

// DSHExecutor runs a cell in a real DSH headless subprocess (bench.executor
// = dsh): its own DSH_HOME and workspace, made for the cell and removed
// after it; mull's bridge plugin written into that home as 'mull dsh
// install' writes it, configured to serve the side's snapshot
// (benchSnapshot) instead of the live memory; the agent's model reached
// with mull's llm key and base URL. The session log it writes is the
// cell's evidence (SessionEvidence) and is kept with the cell.
type DSHExecutor struct {
	// Command runs DSH (bench.dsh_command), split on spaces.
	Command string
	// Timeout bounds one run (bench.dsh_timeout).
	Timeout time.Duration
	// Model is the model the agent asks for (bench.dsh_model, else
	// llm.model).
	Model string
	// BaseURL and APIKey are DeepSeek's (llm.base_url, llm.api_key).
	BaseURL, APIKey string
	// SelfURL is where the plugin reaches mull; APIToken, when mull has
	// one, is given to DSH as MULL_API_TOKEN (never written to a file).
	SelfURL, APIToken string
	// TempDir is where cell directories go; "" is os.TempDir().
	TempDir string
}

// Execute runs DSH on the case's statement and maps its session log.
func (e *DSHExecutor) Execute(ctx context.Context, in Input) (Outcome, error) {
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
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	cmd, err := e.command(ctx, home, work, extra, CellPrompt(in.Case.Statement))
	if err != nil {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: err}
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &limited{w: &stderr, n: 4096}
	runErr := cmd.Run()
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
func (e *DSHExecutor) command(ctx context.Context, home, work, extra, statement string) (*exec.Cmd, error) {
	argv := strings.Fields(e.Command)
	if len(argv) == 0 {
		return nil, errors.New("bench.dsh_command is empty")
	}
	argv = append(argv, "--profile", "headless", "--patch", extra, statement)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = work
	cmd.Env = e.env(home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// env is the DSH run's environment: the cell's home, DeepSeek's key and
// URL, telemetry off, mull's agent token when it has one; PATH and the
// locale from mull's own, and HOME pointed at the cell's directory.
func (e *DSHExecutor) env(home string) []string {
	env := []string{
		"DSH_HOME=" + home,
		"HOME=" + filepath.Dir(home),
		"DEEPSEEK_API_KEY=" + e.APIKey,
		"DEEPSEEK_BASE_URL=" + e.BaseURL,
		"DSH_TELEMETRY_DISABLED=1",
	}
	if e.APIToken != "" {
		env = append(env, "MULL_API_TOKEN="+e.APIToken)
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
