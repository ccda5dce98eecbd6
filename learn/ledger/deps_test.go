package ledger

import (
	"slices"
	"testing"
	"time"
)

func TestDependencies(t *testing.T) {
	checked := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	maxAge := 60 * time.Second
	deps := []Dependency{{Tool: "bash", CommandLine: "npm test", Cwd: "/workspace/my-project",
		Files: []string{"/workspace/my-project/package.json", "/workspace/my-project/test.config.js"}}}
	fp := CommandFingerprint("bash", " npm test ", "", "/workspace/my-project")
	obs := func(ageA, ageB time.Duration) map[string]Observation {
		return map[string]Observation{
			"/workspace/my-project/package.json":   {Observed: Present, Version: "v1", At: checked.Add(-ageA)},
			"/workspace/my-project/test.config.js": {Observed: Absent, At: checked.Add(-ageB)},
		}
	}
	for _, tc := range []struct {
		name    string
		fp      Fingerprint
		latest  map[string]Observation
		missing string
		file    string
	}{
		{"both fresh", fp, obs(time.Second, 10*time.Second), "", ""},
		{"exactly max age", fp, obs(maxAge, 0), "", ""},
		{"a second too old", fp, obs(maxAge+time.Second, 0), DepsTooOld, "/workspace/my-project/package.json"},
		{"observed after the call", fp, obs(0, -time.Millisecond), DepsNotObserved, "/workspace/my-project/test.config.js"},
		{"declared but never observed", fp, map[string]Observation{"/workspace/my-project/package.json": {Observed: Present, Version: "v1", At: checked}}, DepsNotObserved, "/workspace/my-project/test.config.js"},
		{"other command", CommandFingerprint("bash", "npm test -- --watch", "", "/workspace/my-project"), obs(0, 0), DepsNotDeclared, ""},
		{"other cwd", CommandFingerprint("bash", "npm test", "", "/workspace/other"), obs(0, 0), DepsNotDeclared, ""},
		{"other tool", CommandFingerprint("pwsh", "npm test", "", "/workspace/my-project"), obs(0, 0), DepsNotDeclared, ""},
		{"file fact", FileFingerprint("npm test", "/workspace/my-project"), obs(0, 0), DepsNotDeclared, ""},
	} {
		got := Dependencies(deps, tc.fp, tc.latest, checked, maxAge)
		if got.Missing != tc.missing || got.File != tc.file {
			t.Errorf("%s: Dependencies = %+v, want missing %q file %q", tc.name, got, tc.missing, tc.file)
		}
		if (tc.missing == "") != (len(got.Preconditions) == 2) {
			t.Errorf("%s: preconditions %+v", tc.name, got.Preconditions)
		}
	}
	got := Dependencies(deps, fp, obs(0, 0), checked, maxAge).Preconditions
	want := []Witness{
		{Role: Precondition, Kind: WitnessFileState, Path: "/workspace/my-project/package.json", Observed: Present, Version: "v1"},
		{Role: Precondition, Kind: WitnessFileState, Path: "/workspace/my-project/test.config.js", Observed: Absent},
	}
	if !slices.Equal(got, want) {
		t.Errorf("preconditions %+v", got)
	}
	// The recorded preconditions stale the fact when a dependency changes,
	// and an unrelated file does not.
	f := NewCommandFact(CommandFailure{Fingerprint: fp, ExitCode: 1, At: checked, RetryAfter: 300 * time.Second, Preconditions: got})
	changed := Observation{Observed: Present, Version: "v2"}.Witness("/workspace/my-project/package.json")
	if v, stale := VerdictFor(f, []Witness{changed}, checked); v != VerdictStaleAllow || !slices.Equal(stale, []string{WitnessFileState}) {
		t.Errorf("dependency changed: %s %v", v, stale)
	}
	other := Observation{Observed: Present, Version: "v9"}.Witness("/workspace/my-project/README.md")
	if v, _ := VerdictFor(f, []Witness{other}, checked); v != VerdictBlock {
		t.Errorf("unrelated file: %s", v)
	}
	if files := DependencyFiles(deps, fp); len(files) != 2 {
		t.Errorf("DependencyFiles = %v", files)
	}
	if files := DependencyFiles(deps, FileFingerprint("x", "/y")); files != nil {
		t.Errorf("DependencyFiles(file) = %v", files)
	}
}

func TestDepsWhy(t *testing.T) {
	for _, tc := range []struct {
		r    DepsResult
		want string
	}{
		{DepsResult{Missing: DepsNotDeclared}, "no command_dependencies entry matches this command"},
		{DepsResult{Missing: DepsNotObserved, File: "/p/a"}, "/p/a was not observed before the call"},
		{DepsResult{Missing: DepsTooOld, File: "/p/a"}, "/p/a was observed more than 1m0s before the call"},
		{DepsResult{}, ""},
	} {
		if got := tc.r.Why(time.Minute); got != tc.want {
			t.Errorf("Why = %q, want %q", got, tc.want)
		}
	}
}
