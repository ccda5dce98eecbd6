// Package bench holds the pure rules of A/B benchmark runs (seed 004's
// benchmark, jasen215/dsh-continual-harness src/benchmark.ts, evaluate.ts
// and score.ts): frozen cases and their material hash, snapshots of what a
// side is shown and their state hash, the candidate derived as the
// reference plus exactly one refinement (and the check that it is), the
// executor and judge prompts with the strict parsing of their answers, and
// the code-owned decision over a run's cells. The package is pure: no SQL,
// River or HTTP.
package bench

import (
	"encoding/json"
	"time"

	"github.com/mullhq/mull/learn/harness"
)

// CaseState is a case's lifecycle: only a draft may change; a frozen case
// is immutable and is what runs use.
type CaseState string

// The case states.
const (
	Draft  CaseState = "draft"
	Frozen CaseState = "frozen"
)

// Case is one benchmark case. Its material (id, statement, rubric,
// capability) is hashed when it is frozen; title and times are not
// material.
type Case struct {
	ID string `json:"id"`
	// Set groups cases (`mull bench memory --cases SET`); "" reads as
	// "default".
	Set        string     `json:"set"`
	Title      string     `json:"title"`
	Statement  string     `json:"statement"`
	Rubric     string     `json:"rubric"`
	Capability string     `json:"capability,omitempty"`
	State      CaseState  `json:"state"`
	CreatedAt  time.Time  `json:"created_at"`
	FrozenAt   *time.Time `json:"frozen_at,omitempty"`
	// Hash is CaseHash of a frozen case ("" for a draft).
	Hash string `json:"case_hash,omitempty"`
}

// SnapshotKind is what a snapshot holds.
type SnapshotKind string

// The snapshot kinds.
const (
	// HarnessSnapshot: harness entries (a refinement's A/B).
	HarnessSnapshot SnapshotKind = "harness"
	// MemorySnapshot: a memory digest, or none (memory A/B).
	MemorySnapshot SnapshotKind = "memory"
)

// Snapshot is a read-only capture of what one side is shown.
type Snapshot struct {
	ID   string       `json:"id"`
	Kind SnapshotKind `json:"kind"`
	// Session is the session whose merged view (its local store over the
	// global one) a harness snapshot captured; "" is the global store.
	Session string `json:"session,omitempty"`
	// Workspace is a memory snapshot's workspace.
	Workspace string `json:"workspace,omitempty"`
	// Entries are a harness snapshot's entries (merged view).
	Entries harness.State `json:"entries,omitempty"`
	// History lists, in commit order, the refinements committed to the
	// stores a harness snapshot covers when it was captured (the global
	// store, and the session's local one). The candidate's history is the
	// reference's plus exactly the refinement under test.
	History []string `json:"history,omitempty"`
	// Digest is a memory snapshot's digest text ("" for the side without
	// memory).
	Digest string `json:"digest,omitempty"`
	// StateHash is StateHash of this snapshot.
	StateHash string `json:"state_hash"`
	// RefinementID marks a candidate: the reference plus this refinement.
	RefinementID string `json:"refinement_id,omitempty"`
	// Reference is a derived candidate's reference snapshot id.
	Reference  string    `json:"reference,omitempty"`
	CapturedAt time.Time `json:"captured_at"`
}

// Side is one side of a run.
type Side string

// The sides.
const (
	Reference Side = "reference"
	Candidate Side = "candidate"
)

// CellStatus is how a cell ended: ok with a score, or failed with none.
type CellStatus string

// The cell statuses.
const (
	CellOK     CellStatus = "ok"
	CellFailed CellStatus = "failed"
)

// FailureReason says why a cell failed (the seed's EvaluationFailureReason,
// plus mull's dsh-* reasons for the DSH executor).
type FailureReason string

// The failure reasons.
const (
	ProviderError         FailureReason = "provider-error"
	Aborted               FailureReason = "aborted"
	Timeout               FailureReason = "timeout"
	MalformedExecutorJSON FailureReason = "malformed-executor-json"
	MalformedReviewerJSON FailureReason = "malformed-reviewer-json"
	InvalidReviewerScore  FailureReason = "invalid-reviewer-score"
	EmptyReviewerFeedback FailureReason = "empty-reviewer-feedback"
	// DSHFailed: the DSH executor could not run the cell (start failure,
	// exit without a session log).
	DSHFailed FailureReason = "dsh-failed"
)

// Evidence is the executor's structured report of one cell: exactly
// {completed, summary, actions, observations, artifacts?}; unknown fields
// are rejected.
type Evidence struct {
	Completed    bool       `json:"completed"`
	Summary      string     `json:"summary"`
	Actions      []string   `json:"actions"`
	Observations []string   `json:"observations"`
	Artifacts    []Artifact `json:"artifacts,omitempty"`
}

// Artifact is one named output of the executor.
type Artifact struct {
	Name    string `json:"name"`
	Content string `json:"content"`
}

// Verdict is the judge's answer: a score in 0..100 and non-empty feedback.
type Verdict struct {
	Score    float64 `json:"score"`
	Feedback string  `json:"feedback"`
}

// Cell is one case × side × iteration of a run. Score is nil exactly when
// Status is failed: a failed cell is never counted as 0.
type Cell struct {
	RunID         string        `json:"run_id"`
	Side          Side          `json:"side"`
	CaseID        string        `json:"case_id"`
	Iteration     int           `json:"iteration"`
	Score         *float64      `json:"score"`
	Status        CellStatus    `json:"status"`
	FailureReason FailureReason `json:"failure_reason,omitempty"`
	// Detail is the failure's error text, for people (not decided on).
	Detail     string    `json:"detail,omitempty"`
	Feedback   string    `json:"feedback,omitempty"`
	SnapshotID string    `json:"snapshot_id"`
	StateHash  string    `json:"state_hash"`
	CaseHash   string    `json:"case_hash"`
	DurationMS int64     `json:"duration_ms"`
	RecordedAt time.Time `json:"recorded_at"`
	// Evidence is the executor's report (nil when the executor failed).
	Evidence *Evidence `json:"evidence"`
	// Log is the DSH executor's session log (JSON lines, capped), kept as
	// the cell's evidence; empty for the llm executor.
	Log json.RawMessage `json:"log,omitempty"`
}

// Options are the decision's knobs (config [bench]).
type Options struct {
	// PassThreshold (60) is reported only; it never gates acceptance.
	PassThreshold float64 `json:"pass_threshold"`
	// RegressionTolerance (0): how far a candidate mean may fall below
	// the reference's.
	RegressionTolerance float64 `json:"regression_tolerance"`
	// MaxFailedCells (0): failed candidate cells an accepted run may have.
	MaxFailedCells int `json:"max_failed_cells"`
}

// DecisionStatus is the run's verdict.
type DecisionStatus string

// The verdicts.
const (
	Accepted DecisionStatus = "ACCEPTED"
	Rejected DecisionStatus = "REJECTED"
)

// CaseMeans are one case's means over ok cells; nil where a side had none.
type CaseMeans struct {
	Reference *float64 `json:"reference"`
	Candidate *float64 `json:"candidate"`
	// Delta is candidate − reference when both exist.
	Delta *float64 `json:"delta"`
}

// Decision is the code-owned verdict over a run's cells (the seed's
// BenchmarkDecision, plus the per-case means and the reasons a person
// reads).
type Decision struct {
	RunID            string               `json:"run_id"`
	RefinementID     string               `json:"refinement_id,omitempty"`
	Status           DecisionStatus       `json:"status"`
	ReferenceOverall *float64             `json:"reference_overall"`
	CandidateOverall *float64             `json:"candidate_overall"`
	PerCase          map[string]CaseMeans `json:"per_case"`
	// RegressionCases are the cases whose candidate mean fell below the
	// reference's minus the tolerance, sorted.
	RegressionCases []string `json:"regression_cases"`
	FailedCells     int      `json:"failed_cells"`
	FailedReference int      `json:"failed_reference"`
	FailedCandidate int      `json:"failed_candidate"`
	UsableReference int      `json:"usable_reference"`
	UsableCandidate int      `json:"usable_candidate"`
	// Feedback is every non-empty cell feedback, in input order.
	Feedback []string `json:"feedback"`
	// Reasons say which rules rejected the run (empty when accepted), one
	// line each, in the seed's order (a, b, c, d).
	Reasons []string `json:"reasons"`
	// PassThreshold is reported; CandidatePasses says whether the
	// candidate's overall mean reached it. Neither gates the status.
	PassThreshold   float64 `json:"pass_threshold"`
	CandidatePasses bool    `json:"candidate_passes"`
	// AutoRollback is always false: a run never rolls anything back.
	AutoRollback bool      `json:"auto_rollback"`
	CreatedAt    time.Time `json:"created_at"`
}

// DeltaReason says why a candidate is not the reference plus exactly one
// refinement (the seed's CandidateDeltaFailureReason).
type DeltaReason string

// The delta failure reasons.
const (
	DeltaMismatch      DeltaReason = "candidate-delta-mismatch"
	HistoryMismatch    DeltaReason = "history-mismatch"
	RefinementNotFound DeltaReason = "refinement-not-found"
)

// DeltaError is a failed candidate-delta check: the run is refused before
// any cell runs, with code benchmark:run:candidate-delta.
type DeltaError struct {
	RefinementID string
	Reason       DeltaReason
}

// DeltaCode is the seed's structured error code of a failed delta check.
const DeltaCode = "benchmark:run:candidate-delta"

func (e *DeltaError) Error() string {
	return DeltaCode + ": candidate is not reference plus the single refinement " + e.RefinementID + ": " + string(e.Reason)
}
