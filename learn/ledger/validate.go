package ledger

import (
	"fmt"
	"strings"
)

// witnessRoles says which role each witness kind has.
var witnessRoles = map[string]Role{
	WitnessCommandExit:      Outcome,
	WitnessErrorCode:        Outcome,
	WitnessFileState:        Precondition,
	WitnessFileContent:      Precondition,
	WitnessDirectoryListing: Precondition,
	WitnessEnvState:         Precondition,
	WitnessRepoState:        Precondition,
}

// witnessFields are the fields each witness kind needs (JSON names);
// every other field must be empty. stderrSignature is optional, and a
// file-state's version is checked by its observed value.
var witnessFields = map[string][]string{
	WitnessCommandExit:      {"exitCode"},
	WitnessErrorCode:        {"code"},
	WitnessFileState:        {"path", "observed"},
	WitnessFileContent:      {"path", "hash"},
	WitnessDirectoryListing: {"path", "hash"},
	WitnessEnvState:         {"key", "hash"},
	WitnessRepoState:        {"root", "hash"},
}

// ValidateWitness says what is wrong with one witness: an unknown kind, a
// role its kind does not have, a field its kind needs left empty, or one
// of another kind set. Errors name the field by its JSON name
// ("observed"); the caller prefixes where it sits ("evidence[2].").
func ValidateWitness(w Witness) error {
	role, ok := witnessRoles[w.Kind]
	if !ok {
		return fmt.Errorf("kind: %q is not a witness kind (command-exit, error-code, file-state, file-content, directory-listing, env-state, repo-state)", w.Kind)
	}
	if w.Role != role {
		return fmt.Errorf("role: a %s witness has role %s, not %q", w.Kind, role, w.Role)
	}
	set := map[string]bool{
		"exitCode": w.ExitCode != nil, "stderrSignature": w.StderrSignature != "", "code": w.Code != "",
		"path": w.Path != "", "observed": w.Observed != "", "version": w.Version != "",
		"key": w.Key != "", "root": w.Root != "", "hash": w.Hash != "",
	}
	need := witnessFields[w.Kind]
	for _, f := range need {
		if !set[f] {
			return fmt.Errorf("%s: required for a %s witness", f, w.Kind)
		}
	}
	allowed := map[string]bool{}
	for _, f := range need {
		allowed[f] = true
	}
	allowed["stderrSignature"] = w.Kind == WitnessCommandExit
	allowed["version"] = w.Kind == WitnessFileState
	for _, f := range []string{"exitCode", "stderrSignature", "code", "path", "observed", "version", "key", "root", "hash"} {
		if set[f] && !allowed[f] {
			return fmt.Errorf("%s: not a field of a %s witness", f, w.Kind)
		}
	}
	if w.Kind == WitnessFileState {
		switch {
		case w.Observed != Present && w.Observed != Absent:
			return fmt.Errorf("observed: %q is not present or absent", w.Observed)
		case w.Observed == Present && w.Version == "":
			return fmt.Errorf("version: required when observed is present")
		case w.Observed == Absent && w.Version != "":
			return fmt.Errorf("version: must be empty when observed is absent")
		}
	}
	return nil
}

// ValidateEvidence checks every witness and that at least one is an
// outcome (the seed: a negative fact requires at least one outcome
// witness). Errors name the witness: "evidence[1].path: …".
func ValidateEvidence(evidence []Witness) error {
	outcome := false
	for i, w := range evidence {
		if err := ValidateWitness(w); err != nil {
			return fmt.Errorf("evidence[%d].%w", i, err)
		}
		outcome = outcome || w.Role == Outcome
	}
	if !outcome {
		return fmt.Errorf("evidence: a negative fact requires at least one outcome witness")
	}
	return nil
}

// MaxRetryDepth bounds how deep anyOf conditions nest, and MaxRetryBranches
// how many conditions one retry condition holds in all: a condition is
// evaluated on every check.
const (
	MaxRetryDepth    = 4
	MaxRetryBranches = 16
)

// ValidateRetry says what is wrong with a retry condition (nil is valid:
// "evidence changed"): an unknown type, an after without at, an anyOf
// with no branch, fields of another type set, or nesting beyond
// MaxRetryDepth / MaxRetryBranches. Errors name the field:
// "retry_condition.conditions[1].at: …".
func ValidateRetry(c *RetryCondition) error {
	if c == nil {
		return nil
	}
	n := 0
	return validateRetry(*c, "retry_condition", 1, &n)
}

func validateRetry(c RetryCondition, at string, depth int, n *int) error {
	if *n++; *n > MaxRetryBranches {
		return fmt.Errorf("%s: more than %d conditions in all", at, MaxRetryBranches)
	}
	if depth > MaxRetryDepth {
		return fmt.Errorf("%s: anyOf nested deeper than %d", at, MaxRetryDepth)
	}
	switch c.Type {
	case RetryNever, RetryManual, RetryAfter, RetryAnyOf:
	default:
		return fmt.Errorf("%s.type: %q is not one of never, manual, after, anyOf", at, c.Type)
	}
	switch {
	case c.Type == RetryAfter && c.At.IsZero():
		return fmt.Errorf("%s.at: required for an after condition", at)
	case c.Type != RetryAfter && !c.At.IsZero():
		return fmt.Errorf("%s.at: only an after condition has a time", at)
	case c.Type == RetryAnyOf && len(c.Conditions) == 0:
		return fmt.Errorf("%s.conditions: an anyOf condition needs at least one", at)
	case c.Type != RetryAnyOf && len(c.Conditions) > 0:
		return fmt.Errorf("%s.conditions: only an anyOf condition has conditions", at)
	}
	for i, b := range c.Conditions {
		if err := validateRetry(b, fmt.Sprintf("%s.conditions[%d]", at, i), depth+1, n); err != nil {
			return err
		}
	}
	return nil
}

// ValidateMode says whether m is off, warn or block.
func ValidateMode(m Mode) error {
	switch m {
	case ModeOff, ModeWarn, ModeBlock:
		return nil
	}
	return fmt.Errorf("mode: %q is not one of off, warn, block", strings.TrimSpace(string(m)))
}
