package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The test binary standing in for `mull serve` kills itself with SIGKILL at
// the failpoint MULL_TEST_FAILPOINT names: a crash in the middle of a
// ledger transaction, to prove it is all or nothing. Only this test code
// reads the variable; production never installs a failpoint.
func init() {
	if os.Getenv("MULL_TEST_AS_MULL") != "1" {
		return
	}
	if point := os.Getenv("MULL_TEST_FAILPOINT"); point != "" {
		store.SetFailpoint(func(name string) {
			if name == point {
				fmt.Fprintf(os.Stderr, "failpoint %s: kill -9 myself\n", name)
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way: never return into the transaction
			}
		})
	}
}

// ledgerRig is one database, migrated, and the `mull serve` processes on it.
type ledgerRig struct {
	dialect string
	url     string
	cfgFile string
	dir     string
	// svc reads the ledger the processes write, for the checks (every
	// mutation goes over HTTP).
	svc   *negledger.Service
	store *store.Store
	// started counts processes, to name their logs.
	started int
	mu      sync.Mutex
	logs    []string
}

// Workspaces of the acceptance tests: the one named blockWS(...) is in
// block mode, every other one in warn mode (the default).
const wsBlockPrefix = "/p/block-"

// ledgerConfig is the rig's mull.toml: retries due two seconds after a
// failure (short, yet long enough that a loaded machine checks "before the
// retry is due" in time), leases long enough that none expires in a burst
// (a kill test starts its process with a one-second lease), the block
// workspaces, and the batch test's declared dependencies.
func ledgerConfig(blockWorkspaces []string) string {
	var b strings.Builder
	b.WriteString("[ledger]\nmode = \"warn\"\ncommand_retry_after = \"2s\"\nlease_ttl = \"30s\"\ncommand_evidence_max_age = \"10m\"\n")
	for _, c := range batchCommands {
		fmt.Fprintf(&b, "[[ledger.command_dependencies]]\ntool = \"bash\"\ncommand_line = %q\ncwd = %q\nfiles = [%q]\n",
			c, batchCwd, batchDep)
	}
	for _, ws := range blockWorkspaces {
		fmt.Fprintf(&b, "[ledger.workspaces.%q]\nmode = \"block\"\n", ws)
	}
	return b.String()
}

// The batch test: four commands in one cwd declaring one file.
var batchCommands = []string{"make a", "make b", "make c", "make d"}

const (
	batchCwd = "/p/batch"
	batchDep = "/p/batch/dep.txt"
)

// newLedgerRig migrates a fresh database of the dialect and writes the
// config; blockWorkspaces are the workspaces in block mode.
func newLedgerRig(t testing.TB, dialect string, blockWorkspaces ...string) *ledgerRig {
	t.Helper()
	db := storetest.Database(t, dialect)
	r := &ledgerRig{dialect: dialect, url: dbURL(db), dir: t.TempDir()}
	ctx := context.Background()
	var out syncBuffer
	if code := run(ctx, []string{"--database-url", r.url, "migrate"}, &out, &out); code != 0 {
		t.Fatalf("migrate: %d %s", code, out.String())
	}
	r.cfgFile = filepath.Join(r.dir, "mull.toml")
	if err := os.WriteFile(r.cfgFile, []byte(ledgerConfig(blockWorkspaces)), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.store = s
	r.svc = negledger.New(s, config.Default().Ledger, testLogger())
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, l := range r.logs {
			b, _ := os.ReadFile(l)
			t.Logf("log %s:\n%s", filepath.Base(l), b)
		}
	})
	return r
}

// serveProc is one `mull serve` process of the rig.
type serveProc struct {
	name string
	cmd  *exec.Cmd
	base string
}

// serve starts `mull serve --workers=false` (no cron: no ledger_sweep
// releases a lease behind the test's back) on a free loopback port, with
// extra environment, and waits until it listens.
func (r *ledgerRig) serve(t testing.TB, env ...string) *serveProc {
	t.Helper()
	r.mu.Lock()
	r.started++
	name := fmt.Sprintf("serve-%d", r.started)
	logPath := filepath.Join(r.dir, name+".log")
	r.logs = append(r.logs, logPath)
	r.mu.Unlock()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	env = append([]string{"MULL_LOG_FORMAT=json", "MULL_LOG_LEVEL=info"}, env...)
	cmd := startMull(t, env, logFile, "--database-url", r.url, "--config", r.cfgFile,
		"--listen", "127.0.0.1:0", "serve", "--workers=false")
	waitLog(t, logPath, `"msg":"mull listening"`, 1)
	b, _ := os.ReadFile(logPath)
	m := regexp.MustCompile(`"addr":"(http://[^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no address in its log:\n%s", name, b)
	}
	return &serveProc{name: name, cmd: cmd, base: string(m[1])}
}

// kill9 ends the process with SIGKILL and reaps it.
func (p *serveProc) kill9(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// waitDead waits until the process has ended by itself (a failpoint).
func (p *serveProc) waitDead(t testing.TB) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("%s ended with %v, want killed by its failpoint (SIGKILL)", p.name, err)
		}
	case <-testwait.After(t):
		t.Fatalf("%s did not die at its failpoint", p.name)
	}
}

// ledgerHTTP is the client of every test request: enough idle connections
// for a burst, no client timeout (the test's deadline bounds the waits).
var ledgerHTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 0}}

// send posts body as JSON and returns the status and the response body, or
// the transport error (a killed process).
func (p *serveProc) send(ctx context.Context, path string, body any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := ledgerHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// post sends body and decodes a 200 answer into out; anything else fails
// the test. Safe from many goroutines (it reports with t.Errorf and
// returns false).
func (p *serveProc) post(t testing.TB, path string, body, out any) bool {
	t.Helper()
	code, b, err := p.send(testwait.Context(t), path, body)
	if err != nil {
		t.Errorf("%s POST %s: %v", p.name, path, err)
		return false
	}
	if code != http.StatusOK {
		t.Errorf("%s POST %s: %d %s", p.name, path, code, b)
		return false
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Errorf("%s POST %s: %v in %s", p.name, path, err, b)
		return false
	}
	return true
}

func (p *serveProc) check(t testing.TB, r negledger.CheckRequest) negledger.CheckResponse {
	t.Helper()
	var resp negledger.CheckResponse
	p.post(t, "/v1/ledger/check", r, &resp)
	return resp
}

func (p *serveProc) observe(t testing.TB, r negledger.ObserveRequest) negledger.ObserveResponse {
	t.Helper()
	var resp negledger.ObserveResponse
	p.post(t, "/v1/ledger/observe", r, &resp)
	return resp
}

func (p *serveProc) fs(t testing.TB, r negledger.FSRequest) negledger.FSResponse {
	t.Helper()
	var resp negledger.FSResponse
	p.post(t, "/v1/ledger/fs", r, &resp)
	return resp
}

// bashCall is a bash call of command in workspace ws (its cwd too).
func bashCall(ws, session, id, command string) negledger.Call {
	return negledger.Call{ToolCallID: id, Tool: "bash", Args: map[string]any{"command": command},
		Cwd: ws, Session: session, Workspace: ws}
}

// failed is a command's failure with exit code 1.
func failed() negledger.Outcome {
	one := 1
	return negledger.Outcome{Status: negledger.Failed, ExitCode: &one, Stderr: "npm ERR! missing script: test"}
}

func succeeded() negledger.Outcome {
	zero := 0
	return negledger.Outcome{Status: negledger.Succeeded, ExitCode: &zero}
}

// facts are every fact of a workspace, every version, as stored.
func (r *ledgerRig) facts(t testing.TB, ws string) []ledger.Fact {
	t.Helper()
	fs, err := r.svc.List(context.Background(), negledger.Filter{Workspace: ws, Limit: 1000})
	if err != nil {
		t.Fatalf("list facts of %s: %v", ws, err)
	}
	return fs
}

// current is the one current fact of a workspace; it fails the test
// unless there is exactly one.
func (r *ledgerRig) current(t testing.TB, ws string) ledger.Fact {
	t.Helper()
	var cur []ledger.Fact
	for _, f := range r.facts(t, ws) {
		if f.Current {
			cur = append(cur, f)
		}
	}
	if len(cur) != 1 {
		t.Fatalf("%s: %d current facts, want exactly one: %+v", ws, len(cur), cur)
	}
	return cur[0]
}

func (r *ledgerRig) get(t testing.TB, id int64) ledger.Fact {
	t.Helper()
	f, err := r.svc.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get fact %d: %v", id, err)
	}
	return f
}

// consistent checks the invariants that must hold whatever crashed: one
// current fact per (kind, key) in the workspace, a superseded fact names
// its successor, no lease on a fact that is not current, and the
// workspace's counters (summed by Stats) equal want, the facts' own, and
// the events they count.
func (r *ledgerRig) consistent(t testing.TB, ws string, want ledger.Savings) {
	t.Helper()
	fs := r.facts(t, ws)
	current := map[string]int{}
	var sum ledger.Savings
	for _, f := range fs {
		if f.Current {
			current[string(f.Kind)+" "+f.Key]++
		}
		if f.Status == ledger.Superseded && (f.Current || f.SupersededBy == 0) {
			t.Errorf("%s: superseded fact %d is current=%v, superseded_by %d", ws, f.ID, f.Current, f.SupersededBy)
		}
		if g := r.get(t, f.ID); g.Lease != nil && !g.Current {
			t.Errorf("%s: fact %d is not current and holds lease %+v", ws, f.ID, g.Lease)
		}
		sum.DuplicateFailuresObserved += f.Savings.DuplicateFailuresObserved
		sum.WarningsEmitted += f.Savings.WarningsEmitted
		sum.CallsDenied += f.Savings.CallsDenied
	}
	for k, n := range current {
		if n != 1 {
			t.Errorf("%s: %d current facts for %s, want one", ws, n, k)
		}
	}
	stats, err := r.svc.Stats(context.Background(), ws)
	if err != nil {
		t.Fatalf("stats of %s: %v", ws, err)
	}
	events, err := r.store.LedgerEventCounts(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Savings != want || sum != want || events != want {
		t.Errorf("%s: counters %+v (facts sum %+v, events %+v), want %+v", ws, stats.Savings, sum, events, want)
	}
}

// waitUntil waits for the wall clock, which the processes share with the
// test, to pass at (a retry condition's time, a lease's expiry): it is a
// wait for a known moment, not a guess at how long something takes.
func waitUntil(t testing.TB, at time.Time) {
	t.Helper()
	d := time.Until(at) + 5*time.Millisecond
	if d <= 0 {
		return
	}
	if d > testwait.Patience(t) {
		t.Fatalf("%s is too far off to wait for (%s)", at, d)
	}
	<-time.After(d)
}

// parallel runs fn(i) for i in [0, n) at once, released together.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// count counts the elements of xs for which is holds.
func count[T any](xs []T, is func(T) bool) int {
	return len(slices.DeleteFunc(slices.Clone(xs), func(x T) bool { return !is(x) }))
}
