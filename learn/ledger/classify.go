package ledger

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// CodeFSNotFound is the DSH read tool's error code for a missing file, the
// only read failure the ledger records.
const CodeFSNotFound = "FS_NOT_FOUND"

// The outcome statuses a plugin reports for a call that ran (the same
// strings as negledger.Outcome.Status).
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomeReleased  = "released"
)

// The fact sources.
const (
	SourceAuto     = "auto"     // recorded from a tool call's outcome
	SourceAPI      = "api"      // an agent's explicit record
	SourceOperator = "operator" // a person
)

// Result is how a call ended, as Classify reads it.
type Result struct {
	// Status is succeeded, failed or released.
	Status string
	// ExitCode is a command's exit code, when it ran.
	ExitCode *int
	// ErrorCode is the tool error's code, when the tool itself failed.
	ErrorCode string
}

// Class is what a call's result proves.
type Class int

// The classes.
const (
	// ClassNothing: the result proves nothing the ledger records (an
	// untracked tool, a released call, a tool error that is not a
	// command's exit or a missing file).
	ClassNothing Class = iota
	// ClassCommandFailure: a command tool ran and exited non-zero.
	ClassCommandFailure
	// ClassFileMissing: a read tool failed with FS_NOT_FOUND.
	ClassFileMissing
	// ClassSuccess: the attempted action now works (exit 0, a read that
	// returned content): it resolves a current fact.
	ClassSuccess
)

func (c Class) String() string {
	return [...]string{"nothing", "command-failure", "file-missing", "success"}[c]
}

// Classify says what a call of tool that ended with r proves, by the
// seed's rules. A command tool (commandTools first: a tool in both lists
// is a command): a non-zero exit code is a failure and exit 0 a success,
// whatever status says (DSH reports a non-zero exit as a successful tool
// result); no exit code, or a tool error code, proves nothing (a spawn
// error is not the command failing). A read tool: failed with
// FS_NOT_FOUND is a missing file, another error code proves nothing,
// succeeded is a success. Released proves nothing. An unknown status, or
// a succeeded read carrying an error code, is an error naming the field.
func Classify(tool string, r Result, commandTools, readTools []string) (Class, error) {
	switch r.Status {
	case OutcomeSucceeded, OutcomeFailed, OutcomeReleased:
	default:
		return ClassNothing, fmt.Errorf("outcome.status: %q is not one of succeeded, failed, released", r.Status)
	}
	switch {
	case r.Status == OutcomeReleased:
		return ClassNothing, nil
	case slices.Contains(commandTools, tool):
		switch {
		case r.ExitCode == nil || r.ErrorCode != "":
			return ClassNothing, nil
		case *r.ExitCode != 0:
			return ClassCommandFailure, nil
		case r.Status == OutcomeSucceeded:
			return ClassSuccess, nil
		}
		return ClassNothing, nil // exit 0 but reported failed: a tool error after the run
	case slices.Contains(readTools, tool):
		switch {
		case r.Status == OutcomeSucceeded && r.ErrorCode != "":
			return ClassNothing, fmt.Errorf("outcome.error_code: a succeeded outcome has no error code, got %q", r.ErrorCode)
		case r.Status == OutcomeSucceeded:
			return ClassSuccess, nil
		case r.ErrorCode == CodeFSNotFound:
			return ClassFileMissing, nil
		}
	}
	return ClassNothing, nil
}

// CallFingerprint is the fingerprint of a tool call as the model gave it
// (args as decoded from JSON), the seed's attemptFor: a command tool's
// args.command (and args.workdir), a read tool's args.file_path; cwd is
// the session's cwd. ok is false for a tool in neither list or arguments
// without the field (the seed ignores such calls: the tool will report
// its own error).
func CallFingerprint(tool string, args map[string]any, cwd string, commandTools, readTools []string) (Fingerprint, bool) {
	str := func(k string) string {
		s, _ := args[k].(string)
		return s
	}
	switch {
	case slices.Contains(commandTools, tool):
		if strings.TrimSpace(str("command")) == "" {
			return Fingerprint{}, false
		}
		return CommandFingerprint(tool, str("command"), str("workdir"), cwd), true
	case slices.Contains(readTools, tool):
		if str("file_path") == "" {
			return Fingerprint{}, false
		}
		return FileFingerprint(str("file_path"), cwd), true
	}
	return Fingerprint{}, false
}

// CommandFailure is what NewCommandFact needs of a failed command.
type CommandFailure struct {
	// Scope is the workspace.
	Scope       string
	Fingerprint Fingerprint
	ExitCode    int
	Stderr      string
	// At is when the failure was observed; the retry is allowed at
	// At + RetryAfter (ledger.command_retry_after).
	At         time.Time
	RetryAfter time.Duration
	// Preconditions are the declared dependencies' file states observed
	// before the call (Dependencies); none for a cooldown-only fact.
	Preconditions []Witness
}

// NewCommandFact is the fact a failed command records, the seed's
// failureToRecord: claim `command exited N (tool)` (never the command),
// the gated preview, a command-exit outcome witness with the gated stderr
// signature, the preconditions, and retry after = At + RetryAfter so a
// transient failure never locks a command for good. The store assigns
// the id and revision.
func NewCommandFact(c CommandFailure) Fact {
	code := c.ExitCode
	evidence := []Witness{{Role: Outcome, Kind: WitnessCommandExit, ExitCode: &code,
		StderrSignature: GatedStderrSignature(c.Stderr)}}
	evidence = append(evidence, c.Preconditions...)
	return Fact{
		Scope: c.Scope, Kind: CommandFailed, Fingerprint: c.Fingerprint, Key: c.Fingerprint.Key(),
		Claim:    CommandClaim(c.ExitCode, c.Fingerprint.Tool),
		Preview:  GatedPreview(c.Fingerprint.CommandLine),
		Evidence: evidence,
		Retry:    &RetryCondition{Type: RetryAfter, At: c.At.Add(c.RetryAfter)},
		Status:   Active, Current: true, Source: SourceAuto,
		CreatedAt: c.At, UpdatedAt: c.At,
	}
}

// NewFileFact is the fact a missing file records: claim `file does not
// exist: <path>` (gated), an FS_NOT_FOUND outcome witness, and a
// file-state absent precondition for every key of the file (keys; nil
// for FileKeys(cwd, path)), so an observation of the file present under
// any of them stales the fact. No retry condition: the fact warns (and
// in block mode denies) until the file is seen.
func NewFileFact(scope string, fp Fingerprint, keys []string, at time.Time) Fact {
	if keys == nil {
		keys = FileKeys(fp.Cwd, fp.Path)
	}
	evidence := []Witness{{Role: Outcome, Kind: WitnessErrorCode, Code: CodeFSNotFound}}
	for _, k := range keys {
		evidence = append(evidence, Witness{Role: Precondition, Kind: WitnessFileState, Path: k, Observed: Absent})
	}
	return Fact{
		Scope: scope, Kind: FileMissing, Fingerprint: fp, Key: fp.Key(),
		Claim: GatedFileClaim(fp.Path), Evidence: evidence,
		Status: Active, Current: true, Source: SourceAuto,
		CreatedAt: at, UpdatedAt: at,
	}
}
