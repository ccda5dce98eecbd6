// Package negledger is the negative ledger service (seed 003): it decides,
// before a tool call runs, whether a refuted path may be walked again
// (Check), records what the call proved after it ran (Observe), takes the
// file states DSH observed (ObserveFS), and serves the facts to people and
// to the digest. The rules are learn/ledger's; the SQL, the transactions
// and the optimistic concurrency are the store's. The agent API, the admin
// API, the CLI and the ledger_sweep job call it.
//
// Every guarantee holds across processes sharing one database: one current
// fact per (scope, kind, fingerprint), one active lease per fact, a
// replayed request answered from its receipt and counted once.
package negledger

import (
	"errors"
	"log/slog"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/store"
)

// Service is the ledger. Build one in main and share it.
type Service struct {
	store  *store.Store
	cfg    config.Ledger
	logger *slog.Logger
	// modes, when set, is a workspace's effective ledger.mode (WithModes).
	modes func(workspace string) string
}

// WithModes makes every check and policy ask f for the workspace's
// ledger.mode at use time (wsconfig: its per-workspace setting, which can
// change without a restart) instead of the config's.
func (s *Service) WithModes(f func(workspace string) string) *Service {
	s.modes = f
	return s
}

// modeFor is workspace's ledger.mode.
func (s *Service) modeFor(workspace string) string {
	if s.modes != nil {
		return s.modes(workspace)
	}
	return s.cfg.ModeFor(workspace)
}

// New makes a Service. Its clock is the store's. Unset config keys take
// their defaults (a validated config has them already).
func New(s *store.Store, cfg config.Ledger, logger *slog.Logger) *Service {
	cfg = config.Config{Ledger: cfg}.WithDefaults().Ledger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: s, cfg: cfg, logger: logger}
}

// Errors the API maps to statuses.
var (
	// ErrNotFound: no such fact (404).
	ErrNotFound = store.ErrNotFound
	// ErrConflict: the fact kept changing under the request for 3
	// optimistic-concurrency rounds (503 with Retry-After: 1).
	ErrConflict = errors.New("ledger: the fact kept changing under this request for 3 rounds; try again")
)

// FieldError is a bad request field (400), named as the request names it.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// Call is the tool call a request is about, as the DSH plugin sees it.
type Call struct {
	// ToolCallID is DSH's callId: required; with the operation it keys the
	// receipt, and one event per (fact, tool_call_id, operation) is kept.
	ToolCallID string `json:"tool_call_id"`
	// Tool is the tool's name (bash, read, ...).
	Tool string `json:"tool"`
	// Args are the tool's arguments as the model gave them (bash:
	// command, workdir; read: file_path).
	Args map[string]any `json:"args"`
	// Cwd is the session's cwd (a bash call's workdir overrides it for
	// the fingerprint).
	Cwd       string `json:"cwd"`
	Session   string `json:"session"`
	Workspace string `json:"workspace"`
}

// CheckRequest is POST /v1/ledger/check's body: a tool call about to run.
type CheckRequest struct {
	Call
}

// CheckResponse is the decision.
type CheckResponse struct {
	Verdict ledger.Answer `json:"verdict"`
	// Mode is the workspace's mode, so the plugin knows it when mull is
	// unreachable later.
	Mode   ledger.Mode `json:"mode"`
	FactID int64       `json:"fact_id,omitempty"`
	// Reason is the seed's text for the verdict: the deny reason (block),
	// the in-progress advice, or the stale note. Empty for a plain allow.
	Reason  string     `json:"reason,omitempty"`
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// LeaseID is set with verify-retry: the plugin sends it back in
	// Observe.
	LeaseID string `json:"lease_id,omitempty"`
	// CheckedAt is the server's time of the decision; Observe echoes it
	// (declared dependencies must be observed before it).
	CheckedAt time.Time `json:"checked_at"`
}

// Outcome is how a call ended, as the plugin read its result.
type Outcome struct {
	// Status: succeeded, failed, or released (the call did not settle
	// anything: cancelled, denied by someone else, unknown result).
	Status string `json:"status"`
	// ExitCode is a command's exit code, when it ran.
	ExitCode *int `json:"exit_code,omitempty"`
	// ErrorCode is the tool error's code (FS_NOT_FOUND for a missing
	// file).
	ErrorCode string `json:"error_code,omitempty"`
	// Stderr is the command's stderr (its first 200 characters are kept
	// as the outcome's signature, through the trust gate).
	Stderr string `json:"stderr,omitempty"`
}

// The outcome statuses.
const (
	Succeeded = "succeeded"
	Failed    = "failed"
	Released  = "released"
)

// ObserveRequest is POST /v1/ledger/observe's body: a call that ran.
type ObserveRequest struct {
	Call
	Outcome Outcome `json:"outcome"`
	// LeaseID is the lease Check granted this call, if any.
	LeaseID string `json:"lease_id,omitempty"`
	// CheckedAt is CheckResponse.CheckedAt of this call, if it was checked.
	CheckedAt *time.Time `json:"checked_at,omitempty"`
}

// ObserveResponse says what the outcome did to the ledger.
type ObserveResponse struct {
	// Effect: recorded (a new fact), evidence (a new evidence version of
	// the current fact), resolved, released, or none.
	Effect string      `json:"effect"`
	Mode   ledger.Mode `json:"mode"`
	FactID int64       `json:"fact_id,omitempty"`
	// Note is the text the plugin adds as additional context after the
	// call (warn mode: a repeat failure's warning, unless deduped; a stale
	// fact's note). Empty for none. Never a rewrite of the result.
	Note string `json:"note,omitempty"`
	// Duplicate: the call repeated a current fact's failure (counted in
	// duplicate_failures_observed).
	Duplicate bool `json:"duplicate,omitempty"`
}

// The observe effects.
const (
	EffectRecorded = "recorded"
	EffectEvidence = "evidence"
	EffectResolved = "resolved"
	EffectReleased = "released"
	EffectNone     = "none"
)

// FSObservation is one DSH fs/observed event.
type FSObservation struct {
	// Path is the model's path (scoped by the session's cwd), and
	// DisplayPath DSH's resolved path: both key the same file.
	Path        string `json:"path,omitempty"`
	DisplayPath string `json:"display_path"`
	// Observed is present or absent; Version is present's opaque version.
	Observed string `json:"observed"`
	Version  string `json:"version,omitempty"`
	// ToolCallID is the call that made the observation, when known.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// FSRequest is POST /v1/ledger/fs's body.
type FSRequest struct {
	Session      string          `json:"session"`
	Workspace    string          `json:"workspace"`
	Cwd          string          `json:"cwd"`
	Observations []FSObservation `json:"observations"`
}

// FSResponse lists the facts the observations made stale, in one
// all-or-nothing transition.
type FSResponse struct {
	Stored int     `json:"stored"`
	Staled []int64 `json:"staled"`
}

// RecordRequest is POST /v1/ledger/facts: an explicit fact (the kinds not
// wired to tools, approach_rejected and api_unavailable), with its
// evidence.
type RecordRequest struct {
	OperationID string                 `json:"operation_id"`
	Session     string                 `json:"session"`
	Workspace   string                 `json:"workspace"`
	Fingerprint ledger.Fingerprint     `json:"fingerprint"`
	Claim       string                 `json:"claim"`
	Evidence    []ledger.Witness       `json:"evidence"`
	Retry       *ledger.RetryCondition `json:"retry_condition,omitempty"`
}

// Policy is GET /v1/ledger/policy?workspace=W: what the plugin needs to
// know before it calls (which tools to send, its timeout, the mode to
// assume when mull is unreachable).
type Policy struct {
	Mode            ledger.Mode `json:"mode"`
	CommandTools    []string    `json:"command_tools"`
	ReadTools       []string    `json:"read_tools"`
	ClientTimeoutMS int64       `json:"client_timeout_ms"`
}

// Filter selects facts for List.
type Filter struct {
	Workspace string
	// Status: active, stale, resolved, superseded; empty for all.
	Status ledger.Status
	// CurrentOnly leaves out superseded versions.
	CurrentOnly bool
	Limit       int
}

// SweepReport is what one ledger_sweep did.
type SweepReport struct {
	// LeasesReleased: expired leases released.
	LeasesReleased int `json:"leases_released"`
	// Expired: facts whose TTL passed (after conditions met), counted for
	// the report; they stay current and allow the next verify-retry.
	Expired int `json:"expired"`
	// ReceiptsPruned, ObservationsPruned, WarningsPruned: bookkeeping rows
	// older than they can matter.
	ReceiptsPruned     int `json:"receipts_pruned"`
	ObservationsPruned int `json:"observations_pruned"`
	WarningsPruned     int `json:"warnings_pruned"`
	// FactsPruned: resolved and superseded facts (with their events)
	// older than FactKeep (30 days).
	FactsPruned int `json:"facts_pruned"`
}

// PolicyFor is the plugin's policy for a workspace.
func (s *Service) PolicyFor(workspace string) Policy {
	return Policy{Mode: ledger.Mode(s.modeFor(workspace)), CommandTools: s.cfg.CommandTools,
		ReadTools: s.cfg.ReadTools, ClientTimeoutMS: s.cfg.ClientTimeout.D().Milliseconds()}
}
