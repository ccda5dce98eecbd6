// Package harnesses is the harness service (seed 004): it reads and merges
// the versioned harness entries, applies refinements under learn/harness's
// rules with the store serializing every apply of one scope, rolls them
// back, records the review job's verdicts, and serves the projection and
// the skills DSH injects. The agent API, the admin API, the CLI and the
// refine_review job call it; the SQL is the store's.
//
// Every guarantee holds across processes sharing one database: applies to
// one scope are serialized (the scope's row is locked), so an edit planned
// against an entry another refinement changed fails rule 6 ("entry changed
// during refinement planning") and nothing is lost; a refinement id is
// applied at most once.
package harnesses

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// Service is the harness. Build one in main and share it; it holds no
// state of its own.
type Service struct {
	store  *store.Store
	cfg    config.Harness
	logger *slog.Logger
}

// New makes a Service. Its clock is the store's. Unset config keys take
// their defaults.
func New(s *store.Store, cfg config.Harness, logger *slog.Logger) *Service {
	cfg = config.Config{Harness: cfg}.WithDefaults().Harness
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: s, cfg: cfg, logger: logger}
}

// Errors the API maps to statuses.
var (
	// ErrNotFound: no such entry, refinement or review (404).
	ErrNotFound = store.ErrNotFound
	// ErrConflict: a deterministic conflict (409), e.g. promoting an id
	// the global store has ("global id conflict"), a refinement id that
	// exists, an id that names entries of several kinds.
	ErrConflict = errors.New("conflict")
)

// ConflictError is an ErrConflict with the seed's message.
type ConflictError struct{ Msg string }

func (e *ConflictError) Error() string   { return e.Msg }
func (e *ConflictError) Is(t error) bool { return t == ErrConflict }

// FieldError is a bad request field (400), named as the request names it.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// Source says who made a refinement.
type Source string

// The sources.
const (
	// ByJob: the refine_review job (automatic, or a manual refine it ran).
	ByJob Source = "job"
	// ByAgent: the agent's harness_refine / harness_wrapup tools.
	ByAgent Source = "agent"
	// ByAdmin: a person, over the admin API or the CLI.
	ByAdmin Source = "admin"
)

// ApplyRequest is one refinement to apply.
type ApplyRequest struct {
	// ID is the refinement id; "" lets the service name it
	// ("refine_<unix ms>_<rand>"). The job passes "refine_<job id>".
	ID       string
	Proposal harness.Proposal
	Scope    harness.Scope
	// Baseline is the target store as the planner saw it (nil: the store
	// now, so rule 6 cannot fail). BaselineVersions is the admin API's
	// form: "kind/id" → the version planned against; a listed entry
	// whose version differs (or that is gone, or 0 for "absent") fails
	// rule 6.
	Baseline         harness.State
	BaselineVersions map[string]int
	// Automatic: the review job's path (protected entries and kinds are
	// immutable).
	Automatic bool
	// Source is who made it ("" reads as ByAdmin).
	Source Source
	JobID  int64
	// SessionID is the session whose trajectory made it (provenance).
	SessionID  string
	RollbackOf string

	// lifecycle: an archive or pin edit (an admin's skips approval);
	// approved: a held refinement a person accepted.
	lifecycle, approved bool
}

// Applied is what an apply did. Pending is set instead of Refinement when
// harness.require_global_approval held a global refinement as a proposal.
type Applied struct {
	Refinement harness.Refinement `json:"refinement"`
	// Pending is the proposal id the refinement waits as.
	Pending string `json:"pending_proposal,omitempty"`
}

// Apply applies r in its own transaction.
func (s *Service) Apply(ctx context.Context, r ApplyRequest) (a Applied, err error) {
	err = s.store.InTx(ctx, func(tx *sql.Tx) error {
		a, err = s.applyTx(ctx, tx, r)
		return err
	})
	return a, err
}

// ApplyTx applies r inside tx (the job's completing transaction): the
// scope's row is locked first, so applies of one scope are serialized.
func (s *Service) ApplyTx(ctx context.Context, tx *sql.Tx, r ApplyRequest) (Applied, error) {
	return s.applyTx(ctx, tx, r)
}

// State is one store's entries now (tombstones excluded).
func (s *Service) State(ctx context.Context, scope harness.Scope) (harness.State, error) {
	return s.state(ctx, s.store.DB, scope)
}

// Merged is what a session sees: its local store over the global one.
func (s *Service) Merged(ctx context.Context, session string) (harness.State, error) {
	_, _, m, err := s.merged(ctx, s.store.DB, session)
	return m, err
}

// EntryView is an entry with the store it is in.
type EntryView struct {
	harness.Entry
	Scope harness.Scope `json:"scope"`
	// Shadowed: a global entry the session has a local entry of the same
	// kind and id over (listed with --session).
	Shadowed bool `json:"shadowed,omitempty"`
	// Injections counts how often it reached an agent's context.
	Injections int `json:"injections"`
}

// ListFilter filters List.
type ListFilter struct {
	// Session: that session's local entries and the global ones
	// (shadowed marked); "": the global store only.
	Session string
	Kind    harness.Kind
	// Archived includes archived entries.
	Archived bool
}

// List lists entries by kind then id.
func (s *Service) List(ctx context.Context, f ListFilter) ([]EntryView, error) { return s.list(ctx, f) }

// EntryRef names one entry. Kind may be "" when the id is one kind's only.
type EntryRef struct {
	Scope harness.Scope
	Kind  harness.Kind
	ID    string
}

// Get reads an entry as it is now, or as it was at at (non-zero): the
// version in force then. A deleted entry at at is ErrNotFound.
func (s *Service) Get(ctx context.Context, ref EntryRef, at time.Time) (EntryView, error) {
	return s.get(ctx, ref, at)
}

// Version is one version of an entry, with the refinement that made it.
type Version struct {
	harness.Entry
	Deleted      bool      `json:"deleted,omitempty"`
	RefinementID string    `json:"refinement_id"`
	RecordedAt   time.Time `json:"recorded_at"`
}

// Versions lists every version of an entry, oldest first.
func (s *Service) Versions(ctx context.Context, ref EntryRef) ([]Version, error) {
	return s.versions(ctx, ref)
}

// RefinementView is a refinement with its provenance.
type RefinementView struct {
	harness.Refinement
	Source    Source `json:"source"`
	JobID     int64  `json:"job_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	Automatic bool   `json:"automatic"`
	// RolledBackBy is the rollback's id when one was applied.
	RolledBackBy string `json:"rolled_back_by,omitempty"`
}

// HistoryFilter filters History.
type HistoryFilter struct {
	// Session: its local refinements and the global ones; "": all.
	Session string
	// Scope "global" or "local" narrows; "" is both.
	Scope string
	Limit int
}

// History lists refinements, newest first.
func (s *Service) History(ctx context.Context, f HistoryFilter) ([]RefinementView, error) {
	return s.history(ctx, s.store.DB, f)
}

// Refinement reads one refinement.
func (s *Service) Refinement(ctx context.Context, id string) (RefinementView, error) {
	r, err := s.store.GetHarnessRefinement(ctx, s.store.DB, id)
	if err != nil {
		return RefinementView{}, err
	}
	return refinementView(r), nil
}

// Rollback applies the reversal of refinement id (harness.RollbackOf) to
// its own scope, manual path. Rolling back twice is ErrConflict.
func (s *Service) Rollback(ctx context.Context, id string, src Source) (Applied, error) {
	return s.inTx(ctx, func(tx *sql.Tx) (Applied, error) { return s.rollback(ctx, tx, id, src) })
}

// SetLifecycle archives (archive true) or restores an entry, or pins or
// unpins it (pin non-nil), as a one-edit manual refinement with reason.
func (s *Service) SetLifecycle(ctx context.Context, ref EntryRef, archive, pin *bool, reason string, src Source) (Applied, error) {
	return s.inTx(ctx, func(tx *sql.Tx) (Applied, error) { return s.setLifecycle(ctx, tx, ref, archive, pin, reason, src) })
}

// Promote copies a session's local entry to the global store (the seed's
// promoteEntry): "local entry not found: <id>", "ambiguous local id:
// <id>", "global id conflict" are ConflictErrors (not found: ErrNotFound).
func (s *Service) Promote(ctx context.Context, session, id string, src Source) (Applied, error) {
	return s.inTx(ctx, func(tx *sql.Tx) (Applied, error) { return s.promote(ctx, tx, session, id, src) })
}

// Wrapup is the seed's deterministic wrap-up for a session's local
// entries.
func (s *Service) Wrapup(ctx context.Context, session string) ([]harness.Suggestion, error) {
	return s.wrapup(ctx, session)
}

// ReviewRow is one review verdict (the seed's reviews.jsonl row).
type ReviewRow struct {
	ID        int64           `json:"id"`
	At        time.Time       `json:"at"`
	Session   string          `json:"session,omitempty"`
	Workspace string          `json:"workspace,omitempty"`
	Scope     harness.Scope   `json:"scope"`
	Trigger   harness.Trigger `json:"trigger"`
	Turns     int             `json:"turns_since_last_review"`
	Outcome   harness.Outcome `json:"outcome"`
	Rationale string          `json:"rationale,omitempty"`
	// RefinementID is the applied refinement, or the pending proposal id.
	RefinementID string             `json:"refinement_id,omitempty"`
	Rejected     []harness.Rejected `json:"rejected_edits,omitempty"`
	JobID        int64              `json:"job_id,omitempty"`
	// Route is the trajectory's route (verbatim or summary).
	Route harness.Route `json:"route,omitempty"`
}

// RecordReview stores a review row inside tx.
func (s *Service) RecordReview(ctx context.Context, tx *sql.Tx, r ReviewRow) (int64, error) {
	return s.recordReview(ctx, tx, r)
}

// ReviewFilter filters Reviews.
type ReviewFilter struct {
	Session string
	JobID   int64
	Limit   int
}

// Reviews lists review rows, newest first.
func (s *Service) Reviews(ctx context.Context, f ReviewFilter) ([]ReviewRow, error) {
	return s.reviews(ctx, f)
}

// Projection is what the agent is shown, with its ETag.
type Projection struct {
	Text  string   `json:"text"`
	ETag  string   `json:"etag"`
	Keys  []string `json:"keys"`
	Count int      `json:"count"`
	Query string   `json:"query"`
}

// Projection ranks and renders the session's merged harness for query
// ("" derives it from the session's stored user messages).
func (s *Service) Projection(ctx context.Context, session, query string) (Projection, error) {
	return s.projection(ctx, session, query)
}

// RecordInjections counts that the projection's keys reached the
// session's context (the wrap-up's telemetry).
func (s *Service) RecordInjections(ctx context.Context, session string, keys []string) error {
	return s.store.InTx(ctx, func(tx *sql.Tx) error { return s.recordInjections(ctx, tx, session, keys) })
}

// Skill is one SKILL.md bundle DSH reads.
type Skill struct {
	// Name is the DSH skill name and bundle directory: "mull-<id>".
	Name string `json:"name"`
	// Source: "harness" (a skill entry) or "playbook" (a retro playbook).
	Source   string `json:"source"`
	ID       string `json:"id"`
	Version  int    `json:"version"`
	Markdown string `json:"markdown"`
}

// Skills are the bundles a session's DSH should have, with an ETag.
type Skills struct {
	ETag   string  `json:"etag"`
	Skills []Skill `json:"skills"`
}

// Skills lists the active GLOBAL skill entries and, with
// harness.playbook_skills, the workspace's playbooks: DSH's skills dir is
// shared by every session on the machine, so a session-local skill is not
// served as a bundle (it stays in that session's projection).
func (s *Service) Skills(ctx context.Context, session, workspace string) (Skills, error) {
	return s.skills(ctx, session, workspace)
}

// Decide accepts or rejects a pending harness proposal (a global
// refinement held by require_global_approval): accept applies it (rule 6
// against the baseline it was planned on), in the transaction that marks
// the proposal decided. by is who decides (store.DecidedByPanel, …API or
// …CLI), kept with the decision.
func (s *Service) Decide(ctx context.Context, proposalID string, accept bool, note, by string) (Applied, error) {
	return s.inTx(ctx, func(tx *sql.Tx) (Applied, error) { return s.decide(ctx, tx, proposalID, accept, note, by) })
}

// inTx runs fn in one transaction and returns what it applied.
func (s *Service) inTx(ctx context.Context, fn func(tx *sql.Tx) (Applied, error)) (a Applied, err error) {
	err = s.store.InTx(ctx, func(tx *sql.Tx) error {
		a, err = fn(tx)
		return err
	})
	return a, err
}
