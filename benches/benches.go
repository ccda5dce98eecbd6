// Package benches is the benchmark service (seed 004's benchmark): frozen
// cases, snapshots of what each side is shown, and A/B runs started as a
// workflow of bench_cell steps fanned out over case × side × iteration and
// joined by one bench_decide step. The API, the CLI, the DSH bridge's
// harness_benchmark tool and the two job kinds call it; the SQL is the
// store's, the rules are learn/bench's.
//
// A run never refines, rolls back or writes harness state: it reads
// snapshots and records cells and a decision.
package benches

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// Service is the benchmark service. Build one in main and share it.
type Service struct {
	store    *store.Store
	cfg      config.Bench
	harness  *harnesses.Service
	memories *memories.Service
	runner   *workflows.Runner
	logger   *slog.Logger
	// admin, api: mull has an admin token and an API token (WithTokens).
	admin, api bool
}

// New makes a Service. Unset config keys take their defaults.
func New(s *store.Store, cfg config.Bench, h *harnesses.Service, m *memories.Service, r *workflows.Runner, logger *slog.Logger) *Service {
	cfg = config.Config{Bench: cfg}.WithDefaults().Bench
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: s, cfg: cfg, harness: h, memories: m, runner: r, logger: logger}
}

// Errors the API maps to statuses.
var (
	// ErrNotFound: no such case, snapshot or run (404).
	ErrNotFound = store.ErrNotFound
	// ErrConflict: a deterministic conflict (409): a duplicate case id, a
	// frozen case edited or frozen again, a snapshot id taken.
	ErrConflict = errors.New("conflict")
)

// CodedError is an error with the seed's structured code
// ("benchmark:<action>:<code>", e.g. benchmark:freeze:not-draft,
// benchmark:run:no-frozen-cases) that the API and the tool return as is.
// A *bench.DeltaError is the run's candidate-delta refusal (409).
type CodedError struct {
	Code string
	Msg  string
	// Status is the HTTP status it maps to (400, 404 or 409).
	Status int
}

func (e *CodedError) Error() string { return e.Code + ": " + e.Msg }

// Is makes a 404 CodedError an ErrNotFound and a 409 one an ErrConflict,
// so callers that only know those errors map it right.
func (e *CodedError) Is(target error) bool {
	return target == ErrNotFound && e.Status == 404 || target == ErrConflict && e.Status == 409
}

// FieldError is a bad request field (400), named as the request names it.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// CaseInput is a new draft case.
type CaseInput struct {
	ID, Set, Title, Statement, Rubric, Capability string
}

// CaseFilter filters Cases.
type CaseFilter struct {
	Set   string
	State bench.CaseState
}

// CaptureRequest captures a harness snapshot.
type CaptureRequest struct {
	// ID is the snapshot id; "" lets the service name it (snap_…).
	ID string
	// Session: that session's merged view; "": the global store.
	Session string
}

// RunRequest starts a refinement's A/B run.
type RunRequest struct {
	// Refinement is the refinement under test; Reference the snapshot
	// captured before it applied.
	Refinement string
	Reference  string
	// Set picks the frozen cases ("" = every frozen case).
	Set string
	// Runs is the iterations per case and side (0 = bench.default_runs;
	// negative is benchmark:run:runs-invalid, more than bench.max_runs
	// benchmark:run:runs-exceeds-max, both 400).
	Runs int
	// Workspace is the budget key the cells charge ("" = global only).
	Workspace string
	// By is who asked: "admin", "agent:<session>", "cli".
	By string
}

// MemoryRunRequest starts a memory A/B run: the same frozen cases with
// the workspace's digest (candidate) and without it (reference).
type MemoryRunRequest struct {
	Workspace string
	Set       string
	Runs      int
	By        string
}

// Run is a run's record: its cells so far, and the decision once made.
type Run struct {
	ID string `json:"id"`
	// Kind is "refinement" or "memory".
	Kind         string        `json:"kind"`
	RefinementID string        `json:"refinement_id,omitempty"`
	Reference    string        `json:"reference_snapshot_id"`
	Candidate    string        `json:"candidate_snapshot_id"`
	Workspace    string        `json:"workspace,omitempty"`
	Set          string        `json:"set,omitempty"`
	CaseIDs      []string      `json:"case_ids"`
	Runs         int           `json:"runs"`
	Options      bench.Options `json:"options"`
	Executor     string        `json:"executor"`
	// Status is running, decided, failed (the workflow failed) or
	// cancelled.
	Status     string          `json:"status"`
	WorkflowID string          `json:"workflow_run_id"`
	By         string          `json:"by,omitempty"`
	Cells      []bench.Cell    `json:"cells"`
	Decision   *bench.Decision `json:"decision"`
	// Progress counts cells: total (cases × 2 × runs), recorded, failed;
	// Tokens and CostUSD sum the run's LLM calls.
	Total   int        `json:"cells_total"`
	Done    int        `json:"cells_done"`
	Failed  int        `json:"cells_failed"`
	Tokens  int64      `json:"tokens"`
	CostUSD float64    `json:"cost_usd"`
	Created time.Time  `json:"created_at"`
	Decided *time.Time `json:"decided_at,omitempty"`
}

// RunFilter filters Runs.
type RunFilter struct {
	Kind   string
	Status string
	Limit  int
}

// AddCase stores a draft case. Its texts pass the trust gate (a
// quarantined text refuses the case, naming the field).
func (s *Service) AddCase(ctx context.Context, in CaseInput) (bench.Case, error) {
	return s.addCase(ctx, in)
}

// AddCases stores draft cases all or nothing: every case is gated and
// checked, then all are inserted in one transaction, so a bad case, a
// repeated id or an id already stored adds none. Errors name the case by
// its index (cases[2].rubric).
func (s *Service) AddCases(ctx context.Context, in []CaseInput) ([]bench.Case, error) {
	return s.addCases(ctx, in)
}

// UpdateCase changes a draft case's texts; a frozen case is
// benchmark:update:frozen (409). Empty fields of in keep their values.
func (s *Service) UpdateCase(ctx context.Context, in CaseInput) (bench.Case, error) {
	return s.updateCase(ctx, in)
}

// FreezeCase freezes a draft case and records its material hash.
func (s *Service) FreezeCase(ctx context.Context, id string) (bench.Case, error) {
	return s.freezeCase(ctx, id)
}

// FreezeSet freezes every draft case of set in one transaction and
// returns the cases it froze, in the set's order; cases already frozen are
// skipped (none to freeze is fine). A set with no case at all is an error
// (benchmark:freeze:set-not-found), so a mistyped set name is not taken
// for a set already frozen.
func (s *Service) FreezeSet(ctx context.Context, set string) ([]bench.Case, error) {
	return s.freezeSet(ctx, set)
}

// Cases lists cases in the order they were added (then by id).
func (s *Service) Cases(ctx context.Context, f CaseFilter) ([]bench.Case, error) {
	return s.cases(ctx, f)
}

// Capture captures a harness snapshot (merged entries and the refinement
// history they came from). Capture it BEFORE applying the refinement to
// verify.
func (s *Service) Capture(ctx context.Context, r CaptureRequest) (bench.Snapshot, error) {
	return s.capture(ctx, r)
}

// Snapshot reads one snapshot.
func (s *Service) Snapshot(ctx context.Context, id string) (bench.Snapshot, error) {
	return s.store.GetBenchSnapshot(ctx, s.store.DB, id)
}

// Snapshots lists snapshots, newest first, without their entries, history
// and digest (Snapshot reads those).
func (s *Service) Snapshots(ctx context.Context, limit int) ([]bench.Snapshot, error) {
	if limit < 0 || limit > 1000 {
		return nil, &FieldError{Field: "limit", Problem: fmt.Sprintf("%d is not between 1 and 1000", limit)}
	}
	return s.store.ListBenchSnapshots(ctx, s.store.DB, limit)
}

// StartRun checks the request (frozen cases exist, the reference exists,
// the refinement exists, the candidate derived from them passes the delta
// check: else a *bench.DeltaError before any cell runs), stores the run
// and its candidate snapshot and starts its workflow, in one transaction.
func (s *Service) StartRun(ctx context.Context, client *engine.Client, r RunRequest) (Run, error) {
	if err := s.checkExecutor("run"); err != nil {
		return Run{}, err
	}
	return s.startRun(ctx, client, r)
}

// StartMemoryRun captures the workspace's digest (candidate) and an empty
// one (reference) and starts the run like StartRun.
func (s *Service) StartMemoryRun(ctx context.Context, client *engine.Client, r MemoryRunRequest) (Run, error) {
	if err := s.checkExecutor("memory"); err != nil {
		return Run{}, err
	}
	return s.startMemoryRun(ctx, client, r)
}

// Run reads a run with its cells, decision and progress.
func (s *Service) Run(ctx context.Context, id string) (Run, error) { return s.run(ctx, id) }

// Runs lists runs, newest first, without their cells.
func (s *Service) Runs(ctx context.Context, f RunFilter) ([]Run, error) { return s.runs(ctx, f) }

// CellInput is what a bench_cell step needs: the run, the case and the
// side's snapshot.
type CellInput struct {
	Run      Run
	Case     bench.Case
	Snapshot bench.Snapshot
}

// CellInput reads what one cell needs (the step calls it). The case's
// material hash and the snapshot's state hash are checked against what
// was stored. A run, case or side the run does not have is ErrNotFound:
// retrying cannot help.
func (s *Service) CellInput(ctx context.Context, run, caseID string, side bench.Side) (CellInput, error) {
	return s.cellInput(ctx, run, caseID, side)
}

// NoteCellJob records that a cell of run is attempted in job (the step
// calls it before its LLM calls), so the run's progress sums the calls of
// every job its cells ran in, a revived step's earlier jobs too.
func (s *Service) NoteCellJob(ctx context.Context, run string, job int64) error {
	return s.store.NoteBenchJob(ctx, s.store.DB, run, job)
}

// RecordCellTx records a cell in tx (the step's completing transaction).
// A cell already recorded is kept and false returned: a cell is scored
// once, whatever the retries. The step job and attempt that recorded it
// are read from the run's workflow step.
func (s *Service) RecordCellTx(ctx context.Context, tx *sql.Tx, c bench.Cell) (bool, error) {
	return s.recordCellTx(ctx, tx, c)
}

// DecideTx reads the run's cells in tx, decides with learn/bench.Decide
// and records the decision; deciding a decided run returns the stored
// decision.
func (s *Service) DecideTx(ctx context.Context, tx *sql.Tx, run string, now time.Time) (bench.Decision, error) {
	return s.decideTx(ctx, tx, run, now)
}
