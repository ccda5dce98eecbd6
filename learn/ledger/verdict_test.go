package ledger

import (
	"slices"
	"testing"
	"time"
)

// The seed's engine fixtures: npm install under the npmmirror registry.
var (
	mirrorEnv   = Witness{Role: Precondition, Kind: WitnessEnvState, Key: "NPM_CONFIG_REGISTRY", Hash: "hash-mirror"}
	officialEnv = Witness{Role: Precondition, Kind: WitnessEnvState, Key: "NPM_CONFIG_REGISTRY", Hash: "hash-official"}
)

func exit(n int) *int { return &n }

func commandFact(retry *RetryCondition) Fact {
	return Fact{
		Kind:        CommandFailed,
		Fingerprint: CommandFingerprint("bash", "npm   install", "", "/repo"),
		Claim:       "npm install hangs under the npmmirror registry",
		Evidence: []Witness{
			{Role: Outcome, Kind: WitnessCommandExit, ExitCode: exit(1), StderrSignature: "ETIMEDOUT"},
			mirrorEnv,
		},
		Retry: retry, Status: Active, Current: true,
	}
}

func TestRetryVerdictSeedTable(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	future := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
	past := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		c    *RetryCondition
		want Verdict
	}{
		{"none", nil, VerdictWarn},
		{"never", &RetryCondition{Type: RetryNever}, VerdictBlock},
		{"manual", &RetryCondition{Type: RetryManual}, VerdictBlock},
		{"after not yet", &RetryCondition{Type: RetryAfter, At: future}, VerdictBlock},
		{"after met", &RetryCondition{Type: RetryAfter, At: past}, VerdictAllow},
		{"after exactly now", &RetryCondition{Type: RetryAfter, At: now}, VerdictAllow},
		{"after a nanosecond ahead", &RetryCondition{Type: RetryAfter, At: now.Add(time.Nanosecond)}, VerdictBlock},
		{"anyOf manual never", &RetryCondition{Type: RetryAnyOf, Conditions: []RetryCondition{{Type: RetryManual}, {Type: RetryNever}}}, VerdictBlock},
		{"anyOf never", &RetryCondition{Type: RetryAnyOf, Conditions: []RetryCondition{{Type: RetryNever}}}, VerdictBlock},
		{"anyOf after met", &RetryCondition{Type: RetryAnyOf, Conditions: []RetryCondition{{Type: RetryAfter, At: past}}}, VerdictAllow},
		{"anyOf empty", &RetryCondition{Type: RetryAnyOf}, VerdictBlock},
		{"unknown type", &RetryCondition{Type: "sometime"}, VerdictBlock},
	} {
		if got := RetryVerdict(tc.c, now); got != tc.want {
			t.Errorf("%s: RetryVerdict = %s, want %s", tc.name, got, tc.want)
		}
		if got, stale := VerdictFor(commandFact(tc.c), []Witness{mirrorEnv}, now); got != tc.want || stale != nil {
			t.Errorf("%s: VerdictFor = %s %v, want %s", tc.name, got, stale, tc.want)
		}
	}
}

func TestVerdictForStaleAndBack(t *testing.T) {
	now := time.Now()
	f := commandFact(nil)
	// Read-through: mismatched evidence gives stale-allow naming env-state.
	v, stale := VerdictFor(f, []Witness{officialEnv}, now)
	if v != VerdictStaleAllow || !slices.Equal(stale, []string{WitnessEnvState}) {
		t.Errorf("official registry: %s %v", v, stale)
	}
	// A stale fact intercepts again once its original evidence returns.
	f.Status = Stale
	if v, _ := VerdictFor(f, []Witness{mirrorEnv}, now); v != VerdictWarn {
		t.Errorf("mirror back: %s, want warn", v)
	}
	// Unknown counts as unchanged.
	if v, _ := VerdictFor(f, nil, now); v != VerdictWarn {
		t.Errorf("no current evidence: %s", v)
	}
	// A precondition mismatch wins over a blocking condition.
	f.Retry = &RetryCondition{Type: RetryNever}
	if v, _ := VerdictFor(f, []Witness{officialEnv}, now); v != VerdictStaleAllow {
		t.Errorf("never + changed: %s", v)
	}
}

func TestMismatched(t *testing.T) {
	absent := Witness{Role: Precondition, Kind: WitnessFileState, Path: "/repo/missing.txt", Observed: Absent}
	present := func(v string) Witness {
		return Witness{Role: Precondition, Kind: WitnessFileState, Path: "/repo/missing.txt", Observed: Present, Version: v}
	}
	outcome := Witness{Role: Outcome, Kind: WitnessErrorCode, Code: "FS_NOT_FOUND"}
	for _, tc := range []struct {
		name     string
		evidence []Witness
		now      []Witness
		want     []string
	}{
		{"absent then present", []Witness{outcome, absent}, []Witness{present("v1")}, []string{WitnessFileState}},
		{"present version changes", []Witness{outcome, present("v1")}, []Witness{present("v2")}, []string{WitnessFileState}},
		{"present same version", []Witness{outcome, present("v1")}, []Witness{present("v1")}, nil},
		{"stays absent", []Witness{outcome, absent}, []Witness{absent}, nil},
		{"unknown", []Witness{outcome, absent}, nil, nil},
		{"other path", []Witness{outcome, absent}, []Witness{{Role: Precondition, Kind: WitnessFileState, Path: "/other", Observed: Present, Version: "v"}}, nil},
		{"version named absent is not absent", []Witness{outcome, absent}, []Witness{present("absent")}, []string{WitnessFileState}},
		{"outcome never counts", []Witness{outcome}, []Witness{{Role: Outcome, Kind: WitnessErrorCode, Code: "OTHER"}}, nil},
		{"identical env", []Witness{mirrorEnv}, []Witness{mirrorEnv}, nil},
		{"env changed", []Witness{mirrorEnv}, []Witness{officialEnv}, []string{WitnessEnvState}},
		{"each kind once", []Witness{absent, {Role: Precondition, Kind: WitnessFileState, Path: "/ws\x00missing.txt", Observed: Absent}},
			[]Witness{present("v1"), {Role: Precondition, Kind: WitnessFileState, Path: "/ws\x00missing.txt", Observed: Present, Version: "v1"}}, []string{WitnessFileState}},
		{"repo and content", []Witness{{Role: Precondition, Kind: WitnessRepoState, Root: "/r", Hash: "a"}, {Role: Precondition, Kind: WitnessFileContent, Path: "/r/f", Hash: "1"}},
			[]Witness{{Role: Precondition, Kind: WitnessRepoState, Root: "/r", Hash: "b"}, {Role: Precondition, Kind: WitnessFileContent, Path: "/r/f", Hash: "2"}},
			[]string{WitnessRepoState, WitnessFileContent}},
		{"the last current value wins", []Witness{absent}, []Witness{present("v1"), absent}, nil},
	} {
		if got := Mismatched(tc.evidence, tc.now); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Mismatched = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := Unknown([]Witness{outcome, absent, mirrorEnv}, []Witness{mirrorEnv}); !slices.Equal(got, []string{WitnessFileState}) {
		t.Errorf("Unknown = %v", got)
	}
}

func TestIntercepts(t *testing.T) {
	for _, tc := range []struct {
		s       Status
		current bool
		want    bool
	}{
		{Active, true, true}, {Stale, true, true}, {Resolved, true, false}, {Superseded, false, false}, {Active, false, false},
	} {
		if got := Intercepts(Fact{Status: tc.s, Current: tc.current}); got != tc.want {
			t.Errorf("Intercepts(%s, current %v) = %v", tc.s, tc.current, got)
		}
	}
}

func TestRetryAt(t *testing.T) {
	a := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := a.Add(time.Hour)
	if RetryAt(nil) != nil || RetryAt(&RetryCondition{Type: RetryManual}) != nil {
		t.Error("RetryAt without after is not nil")
	}
	c := &RetryCondition{Type: RetryAnyOf, Conditions: []RetryCondition{{Type: RetryManual}, {Type: RetryAfter, At: b}, {Type: RetryAfter, At: a}}}
	if got := RetryAt(c); got == nil || !got.Equal(a) {
		t.Errorf("RetryAt anyOf = %v", got)
	}
}
