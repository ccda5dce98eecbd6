package ledger

import (
	"strings"
	"testing"
	"time"
)

var (
	commandTools = []string{"bash", "pwsh"}
	readTools    = []string{"read"}
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		tool string
		r    Result
		want Class
		err  string
	}{
		// The seed's recording cases.
		{"bash exit 1", "bash", Result{Status: OutcomeSucceeded, ExitCode: exit(1)}, ClassCommandFailure, ""},
		{"bash exit 1 reported failed", "bash", Result{Status: OutcomeFailed, ExitCode: exit(1)}, ClassCommandFailure, ""},
		{"pwsh exit 2", "pwsh", Result{Status: OutcomeSucceeded, ExitCode: exit(2)}, ClassCommandFailure, ""},
		{"bash exit 0", "bash", Result{Status: OutcomeSucceeded, ExitCode: exit(0)}, ClassSuccess, ""},
		{"spawn error", "bash", Result{Status: OutcomeFailed, ErrorCode: "EPERM"}, ClassNothing, ""},
		{"spawn error, no code", "bash", Result{Status: OutcomeFailed}, ClassNothing, ""},
		{"tool error with exit", "bash", Result{Status: OutcomeFailed, ExitCode: exit(1), ErrorCode: "TIMEOUT"}, ClassNothing, ""},
		{"exit 0 reported failed", "bash", Result{Status: OutcomeFailed, ExitCode: exit(0)}, ClassNothing, ""},
		{"read missing", "read", Result{Status: OutcomeFailed, ErrorCode: CodeFSNotFound}, ClassFileMissing, ""},
		{"read denied", "read", Result{Status: OutcomeFailed, ErrorCode: "FS_PERMISSION_DENIED"}, ClassNothing, ""},
		{"read ok", "read", Result{Status: OutcomeSucceeded}, ClassSuccess, ""},
		{"read ok with code", "read", Result{Status: OutcomeSucceeded, ErrorCode: "X"}, ClassNothing, "outcome.error_code"},
		{"untracked", "write", Result{Status: OutcomeFailed, ErrorCode: "X"}, ClassNothing, ""},
		{"released", "bash", Result{Status: OutcomeReleased, ExitCode: exit(1)}, ClassNothing, ""},
		{"bad status", "bash", Result{Status: "done", ExitCode: exit(1)}, ClassNothing, `outcome.status: "done"`},
	} {
		got, err := Classify(tc.tool, tc.r, commandTools, readTools)
		check(t, tc.name, err, tc.err)
		if got != tc.want {
			t.Errorf("%s: Classify = %s, want %s", tc.name, got, tc.want)
		}
	}
	// A tool in both lists is a command.
	if got, _ := Classify("x", Result{Status: OutcomeSucceeded, ExitCode: exit(3)}, []string{"x"}, []string{"x"}); got != ClassCommandFailure {
		t.Errorf("tool in both lists: %s", got)
	}
}

func TestCallFingerprint(t *testing.T) {
	fp, ok := CallFingerprint("bash", map[string]any{"command": " npm install ", "workdir": "sub"}, "/p", commandTools, readTools)
	if !ok || fp != CommandFingerprint("bash", "npm install", "", "/p/sub") {
		t.Errorf("bash: %+v %v", fp, ok)
	}
	fp, ok = CallFingerprint("read", map[string]any{"file_path": "x.txt"}, "/ws", commandTools, readTools)
	if !ok || fp != (Fingerprint{Kind: FileMissing, Path: "x.txt", Cwd: "/ws"}) {
		t.Errorf("read: %+v %v", fp, ok)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"bash", map[string]any{"command": ""}}, {"bash", map[string]any{"command": "  "}}, {"bash", map[string]any{"command": 3}},
		{"bash", nil}, {"read", map[string]any{"file_path": ""}}, {"read", map[string]any{}}, {"write", map[string]any{"file_path": "/x"}},
	} {
		if _, ok := CallFingerprint(tc.tool, tc.args, "/c", commandTools, readTools); ok {
			t.Errorf("CallFingerprint(%s, %v) ok", tc.tool, tc.args)
		}
	}
}

func TestNewCommandFact(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	fp := CommandFingerprint("bash", "SECRET_TOKEN=abc npm install", "", "/ws")
	dep := Witness{Role: Precondition, Kind: WitnessFileState, Path: "/ws/package.json", Observed: Present, Version: "v1"}
	f := NewCommandFact(CommandFailure{Scope: "/ws", Fingerprint: fp, ExitCode: 1, Stderr: "boom\nline2\u0000tail",
		At: at, RetryAfter: 300 * time.Second, Preconditions: []Witness{dep}})
	// The seed: the claim never holds the command; the fingerprint does.
	if f.Claim != "command exited 1 (bash)" || strings.Contains(f.Claim, "SECRET") {
		t.Errorf("claim %q", f.Claim)
	}
	if !strings.Contains(f.Key, "SECRET_TOKEN=abc") {
		t.Errorf("key lost the command: %s", f.Key)
	}
	if len(f.Evidence) != 2 || f.Evidence[0].Kind != WitnessCommandExit || *f.Evidence[0].ExitCode != 1 ||
		f.Evidence[0].StderrSignature != "boom line2 tail" || f.Evidence[1] != dep {
		t.Errorf("evidence %+v", f.Evidence)
	}
	if f.Retry == nil || f.Retry.Type != RetryAfter || !f.Retry.At.Equal(at.Add(300*time.Second)) {
		t.Errorf("retry %+v", f.Retry)
	}
	if f.Status != Active || !f.Current || f.Source != SourceAuto || f.Kind != CommandFailed || f.Scope != "/ws" || !f.CreatedAt.Equal(at) {
		t.Errorf("fact %+v", f)
	}
	if err := ValidateEvidence(f.Evidence); err != nil {
		t.Errorf("NewCommandFact's evidence is invalid: %v", err)
	}
	if f.Preview == "" || strings.Contains(f.Preview, "\n") {
		t.Errorf("preview %q", f.Preview)
	}
}

func TestNewFileFact(t *testing.T) {
	at := time.Now()
	fp := FileFingerprint("x.txt", "/ws")
	f := NewFileFact("/ws", fp, FileKeys("/ws", "x.txt", "/abs/workspace/x.txt"), at)
	if f.Claim != "file does not exist: x.txt" || f.Kind != FileMissing || f.Retry != nil || f.Preview != "" {
		t.Errorf("fact %+v", f)
	}
	// The seed's evidence: error-code, then absent for the scoped model path
	// and the display path (mull adds the resolved path).
	want := []Witness{
		{Role: Outcome, Kind: WitnessErrorCode, Code: CodeFSNotFound},
		{Role: Precondition, Kind: WitnessFileState, Path: "/ws\x00x.txt", Observed: Absent},
		{Role: Precondition, Kind: WitnessFileState, Path: "/ws/x.txt", Observed: Absent},
		{Role: Precondition, Kind: WitnessFileState, Path: "/abs/workspace/x.txt", Observed: Absent},
	}
	if len(f.Evidence) != len(want) {
		t.Fatalf("evidence %+v", f.Evidence)
	}
	for i := range want {
		if f.Evidence[i] != want[i] {
			t.Errorf("evidence[%d] = %+v, want %+v", i, f.Evidence[i], want[i])
		}
	}
	if err := ValidateEvidence(f.Evidence); err != nil {
		t.Error(err)
	}
	// Unknown current state: the fact warns; the file appearing stales it.
	if v, _ := VerdictFor(f, nil, at); v != VerdictWarn {
		t.Errorf("verdict %s", v)
	}
	seen := Witness{Role: Precondition, Kind: WitnessFileState, Path: "/abs/workspace/x.txt", Observed: Present, Version: "v1"}
	if v, _ := VerdictFor(f, []Witness{seen}, at); v != VerdictStaleAllow {
		t.Errorf("after the file appeared: %s", v)
	}
	if g := NewFileFact("/ws", fp, nil, at); len(g.Evidence) != 3 {
		t.Errorf("default keys: %+v", g.Evidence)
	}
}
