// Package ledger is the negative ledger's rules (seed 003): what has been
// proven not to work, with the evidence, and whether an attempt may run
// again. It is pure: fingerprints, claims and previews, evidence
// comparison, the verdict table, the decision an API caller gets, the
// warning dedupe rule and the seed's messages. No SQL, River or HTTP; the
// store keeps facts, the negledger service applies these rules to them.
package ledger

import "time"

// Kind is a fact's family. The first two are recorded from tool calls; the
// last two are modelled but not wired to tools, and are accepted over the
// API with explicit evidence.
type Kind string

// The fact kinds.
const (
	CommandFailed    Kind = "command_failed"
	FileMissing      Kind = "file_missing"
	ApproachRejected Kind = "approach_rejected"
	APIUnavailable   Kind = "api_unavailable"
)

// Kinds lists the kinds.
var Kinds = []Kind{CommandFailed, FileMissing, ApproachRejected, APIUnavailable}

// Fingerprint says which attempts are "the same action". Only these
// fields decide a hit; the claim never does. Which fields are set depends
// on Kind:
//   - command_failed: Tool, CommandLine (trimmed only: inner whitespace is
//     kept, since `printf "a  b"` and `printf "a b"` differ), Cwd (the
//     effective cwd: the call's workdir, else the session's cwd);
//   - file_missing: Path (as the model gave it), Cwd (the session's cwd);
//   - approach_rejected: TaskHash;
//   - api_unavailable: Endpoint.
type Fingerprint struct {
	Kind        Kind   `json:"kind"`
	Tool        string `json:"tool,omitempty"`
	CommandLine string `json:"commandLine,omitempty"`
	Path        string `json:"path,omitempty"`
	Cwd         string `json:"cwd,omitempty"`
	TaskHash    string `json:"taskHash,omitempty"`
	Endpoint    string `json:"endpoint,omitempty"`
}

// Role is what a witness proves.
type Role string

// The witness roles.
const (
	// Outcome witnesses prove the failure happened (exit code, error
	// code). They are history: they never invalidate a fact.
	Outcome Role = "outcome"
	// Precondition witnesses are state that, when it changes, may make the
	// failure obsolete: a fact whose precondition witness differs from the
	// world's current value is stale. Unknown counts as unchanged.
	Precondition Role = "precondition"
)

// The witness kinds (Witness.Kind).
const (
	// Outcome kinds.
	WitnessCommandExit = "command-exit" // ExitCode, StderrSignature
	WitnessErrorCode   = "error-code"   // Code
	// Precondition kinds.
	WitnessFileState        = "file-state"        // Path, Observed (present+Version | absent)
	WitnessFileContent      = "file-content"      // Path, Hash
	WitnessDirectoryListing = "directory-listing" // Path, Hash
	WitnessEnvState         = "env-state"         // Key, Hash
	WitnessRepoState        = "repo-state"        // Root, Hash
)

// File-state observations.
const (
	Present = "present"
	Absent  = "absent"
)

// Witness is one piece of evidence. Which fields are set depends on Kind
// (see the constants). Path of a file-state witness is an opaque key the
// service composes (ObservationKey), so projects stay apart.
type Witness struct {
	Role Role   `json:"role"`
	Kind string `json:"kind"`

	ExitCode        *int   `json:"exitCode,omitempty"`
	StderrSignature string `json:"stderrSignature,omitempty"`
	Code            string `json:"code,omitempty"`

	Path     string `json:"path,omitempty"`
	Observed string `json:"observed,omitempty"`
	Version  string `json:"version,omitempty"`
	Key      string `json:"key,omitempty"`
	Root     string `json:"root,omitempty"`
	Hash     string `json:"hash,omitempty"`
}

// RetryCondition says when a retry is legitimate. A nil *RetryCondition
// is the seed's "evidence changed": the fact warns until a precondition
// witness differs.
type RetryCondition struct {
	// Type is never, manual, after or anyOf.
	Type string `json:"type"`
	// At is when an after condition is met.
	At time.Time `json:"at,omitzero"`
	// Conditions are anyOf's branches.
	Conditions []RetryCondition `json:"conditions,omitempty"`
}

// The retry condition types.
const (
	RetryNever  = "never"
	RetryManual = "manual"
	RetryAfter  = "after"
	RetryAnyOf  = "anyOf"
)

// Status is a fact's history. Whether a fact intercepts is derived per
// query from the current evidence: a stale fact whose original evidence
// returns intercepts again.
type Status string

// The statuses.
const (
	Active Status = "active"
	Stale  Status = "stale"
	// Resolved: a retry succeeded, or a person retracted it.
	Resolved Status = "resolved"
	// Superseded: the same fingerprint failed again after it was resolved,
	// and a newer fact took its place.
	Superseded Status = "superseded"
)

// Verdict is the rule table's answer for an attempt against one fact.
type Verdict string

// The verdicts (seed 003's QueryVerdict).
const (
	// VerdictBlock: the retry condition forbids the attempt.
	VerdictBlock Verdict = "block"
	// VerdictWarn: the evidence is unchanged and no condition is met.
	VerdictWarn Verdict = "warn"
	// VerdictAllow: the retry condition is met.
	VerdictAllow Verdict = "allow"
	// VerdictStaleAllow: a precondition witness changed; the conclusion
	// does not apply now.
	VerdictStaleAllow Verdict = "stale-allow"
)

// Mode is the enforcement mode, per workspace (ledger.mode).
type Mode string

// The modes.
const (
	// ModeOff records and intercepts nothing.
	ModeOff Mode = "off"
	// ModeWarn (the default) never blocks: a repeat failure gets a note
	// after it ran.
	ModeWarn Mode = "warn"
	// ModeBlock denies before dispatch.
	ModeBlock Mode = "block"
)

// Answer is what POST /v1/ledger/check tells the caller.
type Answer string

// The answers.
const (
	// AnswerAllow: no fact applies; run it.
	AnswerAllow Answer = "allow"
	// AnswerWarn: a fact applies (warn mode): run it; the note comes after.
	AnswerWarn Answer = "warn"
	// AnswerDeny: do not run it (block mode).
	AnswerDeny Answer = "deny"
	// AnswerVerifyRetry: this call holds the fact's retry lease; run it,
	// and its outcome settles the fact.
	AnswerVerifyRetry Answer = "verify-retry"
	// AnswerInProgress: another call holds the lease (denied in block
	// mode, advised in warn mode).
	AnswerInProgress Answer = "in-progress"
)

// Savings are the seed's three honest counters. Token savings are not
// estimated here.
type Savings struct {
	// DuplicateFailuresObserved: a later attempt ran and failed the same
	// way again (observed, not prevented).
	DuplicateFailuresObserved int64 `json:"duplicate_failures_observed"`
	// WarningsEmitted: notes attached to results that ran.
	WarningsEmitted int64 `json:"warnings_emitted"`
	// CallsDenied: denies before dispatch, the only proof of an avoided
	// execution.
	CallsDenied int64 `json:"calls_denied"`
}

// Summary is Savings over a scope, with how many facts were hit.
type Summary struct {
	Facts    int64 `json:"facts"`
	Current  int64 `json:"current"`
	FactsHit int64 `json:"facts_hit"`
	Savings
}

// Transition is a fact's last state change, kept for audit.
type Transition struct {
	// Kind is stale or resolved.
	Kind Status    `json:"kind"`
	At   time.Time `json:"at"`
	// StaleWitnesses are the precondition kinds whose value differed.
	StaleWitnesses []string `json:"stale_witnesses,omitempty"`
	// Via is the tool call that drove it, when known.
	Via string `json:"via,omitempty"`
	// Reason is a person's reason for retracting a fact.
	Reason string `json:"reason,omitempty"`
	// By is who retracted it: "operator" for a person, empty otherwise.
	By string `json:"by,omitempty"`
}

// Lease is a fact's active retry lease: one call verifying it.
type Lease struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner"` // the tool_call_id holding it
	ExpiresAt time.Time `json:"expires_at"`
}

// Fact is one negative fact as stored.
type Fact struct {
	ID    int64  `json:"id"`
	Scope string `json:"scope"` // the workspace
	Kind  Kind   `json:"kind"`
	// Fingerprint and Key (Fingerprint.Key) identify the action.
	Fingerprint Fingerprint `json:"fingerprint"`
	Key         string      `json:"key"`
	// Claim is the negative conclusion, generated by mull, never holding
	// the raw command.
	Claim string `json:"claim"`
	// Preview is a command's sanitized preview, at most PreviewMax runes
	// plus an ellipsis; empty for other kinds.
	Preview  string          `json:"preview,omitempty"`
	Evidence []Witness       `json:"evidence"`
	Retry    *RetryCondition `json:"retry_condition,omitempty"`
	Status   Status          `json:"status"`
	// Revision counts the fact's versions (optimistic concurrency).
	Revision int64 `json:"revision"`
	// Current: the one current fact of its (scope, kind, key).
	Current bool `json:"current"`
	// Source is "auto" (a tool call's outcome), "api" (an agent's
	// explicit record) or "operator".
	Source         string      `json:"source"`
	SupersededBy   int64       `json:"superseded_by,omitempty"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
	Savings        Savings     `json:"savings"`
	LastTransition *Transition `json:"last_transition,omitempty"`
	Lease          *Lease      `json:"lease,omitempty"`
}

// PreviewMax is the seed's cap on a command preview, in runes.
const PreviewMax = 80
