package ledger

import (
	"strings"
	"testing"
	"time"
)

func TestValidateWitness(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Witness
		want string
	}{
		{"exit", Witness{Role: Outcome, Kind: WitnessCommandExit, ExitCode: exit(1), StderrSignature: "x"}, ""},
		{"exit 0 is still an exit code", Witness{Role: Outcome, Kind: WitnessCommandExit, ExitCode: exit(0)}, ""},
		{"error code", Witness{Role: Outcome, Kind: WitnessErrorCode, Code: "FS_NOT_FOUND"}, ""},
		{"absent", Witness{Role: Precondition, Kind: WitnessFileState, Path: "/x", Observed: Absent}, ""},
		{"present", Witness{Role: Precondition, Kind: WitnessFileState, Path: "/x", Observed: Present, Version: "v1"}, ""},
		{"env", mirrorEnv, ""},
		{"repo", Witness{Role: Precondition, Kind: WitnessRepoState, Root: "/r", Hash: "h"}, ""},
		{"dir", Witness{Role: Precondition, Kind: WitnessDirectoryListing, Path: "/r", Hash: "h"}, ""},
		{"content", Witness{Role: Precondition, Kind: WitnessFileContent, Path: "/r", Hash: "h"}, ""},
		{"unknown kind", Witness{Role: Outcome, Kind: "exit"}, "kind: \"exit\" is not a witness kind"},
		{"wrong role", Witness{Role: Precondition, Kind: WitnessCommandExit, ExitCode: exit(1)}, "role: a command-exit witness has role outcome"},
		{"no exit code", Witness{Role: Outcome, Kind: WitnessCommandExit}, "exitCode: required"},
		{"no code", Witness{Role: Outcome, Kind: WitnessErrorCode}, "code: required"},
		{"no path", Witness{Role: Precondition, Kind: WitnessFileState, Observed: Absent}, "path: required"},
		{"observed what", Witness{Role: Precondition, Kind: WitnessFileState, Path: "/x", Observed: "gone"}, "observed: \"gone\" is not present or absent"},
		{"present without version", Witness{Role: Precondition, Kind: WitnessFileState, Path: "/x", Observed: Present}, "version: required"},
		{"absent with version", Witness{Role: Precondition, Kind: WitnessFileState, Path: "/x", Observed: Absent, Version: "v"}, "version: must be empty"},
		{"no hash", Witness{Role: Precondition, Kind: WitnessEnvState, Key: "K"}, "hash: required"},
		{"foreign field", Witness{Role: Outcome, Kind: WitnessErrorCode, Code: "X", Path: "/x"}, "path: not a field of a error-code witness"},
		{"stderr on error code", Witness{Role: Outcome, Kind: WitnessErrorCode, Code: "X", StderrSignature: "s"}, "stderrSignature: not a field"},
	} {
		err := ValidateWitness(tc.w)
		check(t, tc.name, err, tc.want)
	}
}

func check(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: unexpected error %v", name, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: error %v, want one containing %q", name, err, want)
	}
}

func TestValidateEvidence(t *testing.T) {
	check(t, "ok", ValidateEvidence(commandFact(nil).Evidence), "")
	// The seed's message.
	check(t, "no outcome", ValidateEvidence([]Witness{mirrorEnv}), "a negative fact requires at least one outcome witness")
	check(t, "empty", ValidateEvidence(nil), "at least one outcome witness")
	check(t, "names the witness", ValidateEvidence([]Witness{{Role: Outcome, Kind: WitnessErrorCode, Code: "X"}, {Role: Precondition, Kind: WitnessFileState, Observed: Absent}}), "evidence[1].path: required")
}

func TestValidateRetry(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nest := func(depth int) *RetryCondition {
		c := RetryCondition{Type: RetryNever}
		for range depth - 1 {
			c = RetryCondition{Type: RetryAnyOf, Conditions: []RetryCondition{c}}
		}
		return &c
	}
	wide := func(n int) *RetryCondition {
		c := RetryCondition{Type: RetryAnyOf}
		for range n - 1 {
			c.Conditions = append(c.Conditions, RetryCondition{Type: RetryManual})
		}
		return &c
	}
	for _, tc := range []struct {
		name string
		c    *RetryCondition
		want string
	}{
		{"nil", nil, ""},
		{"never", &RetryCondition{Type: RetryNever}, ""},
		{"manual", &RetryCondition{Type: RetryManual}, ""},
		{"after", &RetryCondition{Type: RetryAfter, At: at}, ""},
		{"anyOf", &RetryCondition{Type: RetryAnyOf, Conditions: []RetryCondition{{Type: RetryAfter, At: at}, {Type: RetryManual}}}, ""},
		{"unknown", &RetryCondition{Type: "later"}, "retry_condition.type: \"later\" is not one of"},
		{"after without at", &RetryCondition{Type: RetryAfter}, "retry_condition.at: required"},
		{"never with at", &RetryCondition{Type: RetryNever, At: at}, "retry_condition.at: only an after"},
		{"empty anyOf", &RetryCondition{Type: RetryAnyOf}, "retry_condition.conditions: an anyOf condition needs at least one"},
		{"manual with branches", &RetryCondition{Type: RetryManual, Conditions: []RetryCondition{{Type: RetryNever}}}, "only an anyOf"},
		{"nested names the branch", &RetryCondition{Type: RetryAnyOf, Conditions: []RetryCondition{{Type: RetryNever}, {Type: RetryAfter}}}, "retry_condition.conditions[1].at: required"},
		{"depth 4", nest(MaxRetryDepth), ""},
		{"depth 5", nest(MaxRetryDepth + 1), "nested deeper than 4"},
		{"16 in all", wide(MaxRetryBranches), ""},
		{"17 in all", wide(MaxRetryBranches + 1), "more than 16 conditions"},
	} {
		check(t, tc.name, ValidateRetry(tc.c), tc.want)
	}
}

func TestValidateMode(t *testing.T) {
	for _, m := range []Mode{ModeOff, ModeWarn, ModeBlock} {
		check(t, string(m), ValidateMode(m), "")
	}
	check(t, "shout", ValidateMode("shout"), `mode: "shout" is not one of off, warn, block`)
}
