package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Handoff is a workspace's latest handoff: the lines a retro left for the
// next session.
type Handoff struct {
	Workspace  string
	Text       string
	SessionID  string
	JobID      int64
	RecordedAt time.Time
	// SourceAt is the time of the last session event the retro read; zero
	// when unknown (a handoff written before it was kept).
	SourceAt time.Time
}

// RetroRun marks a retro job applied; Counts is JSON.
type RetroRun struct {
	JobID     int64
	SessionID string
	Workspace string
	AppliedAt time.Time
	Counts    string
}

const handoffUpsert = `insert into handoffs (workspace, text, session_id, job_id, recorded_at, source_at)
	values ($1, $2, $3, $4, $5, $6) on conflict (workspace) do update set text = excluded.text,
	session_id = excluded.session_id, job_id = excluded.job_id, recorded_at = excluded.recorded_at,
	source_at = excluded.source_at`

// PutHandoff replaces a workspace's handoff, whatever it was.
func (s *Store) PutHandoff(ctx context.Context, tx *sql.Tx, h Handoff) error {
	_, err := s.putHandoff(ctx, tx, h, "")
	return err
}

// PutNewerHandoff replaces a workspace's handoff unless the stored one was
// drawn from later evidence (its SourceAt is after h's): a retro retried
// late must not overwrite what a newer session left. A stored handoff or an
// h without SourceAt is always replaced. ok reports whether h was stored.
func (s *Store) PutNewerHandoff(ctx context.Context, tx *sql.Tx, h Handoff) (ok bool, err error) {
	return s.putHandoff(ctx, tx, h, ` where handoffs.source_at is null or excluded.source_at is null
		or handoffs.source_at <= excluded.source_at`)
}

func (s *Store) putHandoff(ctx context.Context, tx *sql.Tx, h Handoff, where string) (bool, error) {
	res, err := tx.ExecContext(ctx, handoffUpsert+where,
		h.Workspace, h.Text, h.SessionID, h.JobID, utcMicro(h.RecordedAt), nullTime(h.SourceAt))
	if err != nil {
		return false, fmt.Errorf("put handoff of %q: %w", h.Workspace, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// GetHandoff reads a workspace's handoff; ok is false when it has none.
func (s *Store) GetHandoff(ctx context.Context, q querier, workspace string) (h Handoff, ok bool, err error) {
	var source sql.NullTime
	err = q.QueryRowContext(ctx, `select workspace, text, session_id, job_id, recorded_at, source_at from handoffs where workspace = $1`,
		workspace).Scan(&h.Workspace, &h.Text, &h.SessionID, &h.JobID, &h.RecordedAt, &source)
	if errors.Is(err, sql.ErrNoRows) {
		return h, false, nil
	}
	if err != nil {
		return h, false, fmt.Errorf("read handoff of %q: %w", workspace, err)
	}
	h.RecordedAt = h.RecordedAt.UTC()
	if source.Valid {
		h.SourceAt = source.Time.UTC()
	}
	return h, true, nil
}

// InsertRetroRun marks a retro job applied. ok is false when the job was
// marked already (nothing is written then).
func (s *Store) InsertRetroRun(ctx context.Context, tx *sql.Tx, r RetroRun) (ok bool, err error) {
	if r.Counts == "" {
		r.Counts = "{}"
	}
	res, err := tx.ExecContext(ctx, `insert into retro_runs (job_id, session_id, workspace, applied_at, counts)
		values ($1, $2, $3, $4, $5) on conflict (job_id) do nothing`,
		r.JobID, r.SessionID, r.Workspace, utcMicro(r.AppliedAt), r.Counts)
	if err != nil {
		return false, fmt.Errorf("mark retro job %d applied: %w", r.JobID, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// GetRetroRun reads a retro job's applied marker; ok is false when the job
// has not applied.
func (s *Store) GetRetroRun(ctx context.Context, q querier, jobID int64) (r RetroRun, ok bool, err error) {
	err = q.QueryRowContext(ctx, `select job_id, session_id, workspace, applied_at, counts from retro_runs where job_id = $1`,
		jobID).Scan(&r.JobID, &r.SessionID, &r.Workspace, &r.AppliedAt, &r.Counts)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("read retro run %d: %w", jobID, err)
	}
	r.AppliedAt = r.AppliedAt.UTC()
	return r, true, nil
}

// Playbook is a reusable procedure of a workspace, keyed by slug, with its
// track record: every use counts, a success also verifies it.
type Playbook struct {
	Workspace string
	Slug      string
	Steps     []string
	Uses      int
	Successes int
	Fails     int
	// VerifiedAt is the last successful use; zero when it never succeeded.
	VerifiedAt time.Time
	SessionID  string
	JobID      int64
	UpdatedAt  time.Time
}

const playbookColumns = `workspace, slug, steps, uses, successes, fails, verified_at, session_id, job_id, updated_at`

// PutPlaybook upserts a playbook by workspace and slug: the steps and
// provenance are replaced, the counters kept.
func (s *Store) PutPlaybook(ctx context.Context, tx *sql.Tx, p Playbook) error {
	steps, _ := json.Marshal(nonNilStrings(p.Steps)) // a []string always marshals
	_, err := tx.ExecContext(ctx, `insert into playbooks (workspace, slug, steps, session_id, job_id, updated_at)
		values ($1, $2, $3, $4, $5, $6) on conflict (workspace, slug) do update set steps = excluded.steps,
		session_id = excluded.session_id, job_id = excluded.job_id, updated_at = excluded.updated_at`,
		p.Workspace, p.Slug, string(steps), p.SessionID, p.JobID, utcMicro(p.UpdatedAt))
	if err != nil {
		return fmt.Errorf("put playbook %s of %q: %w", p.Slug, p.Workspace, err)
	}
	return nil
}

// ListPlaybooks lists a workspace's playbooks by slug.
func (s *Store) ListPlaybooks(ctx context.Context, q querier, workspace string) ([]Playbook, error) {
	rows, err := q.QueryContext(ctx, `select `+playbookColumns+` from playbooks where workspace = $1 order by slug`, workspace)
	if err != nil {
		return nil, fmt.Errorf("list playbooks of %q: %w", workspace, err)
	}
	defer rows.Close()
	var out []Playbook
	for rows.Next() {
		p, err := scanPlaybook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// UsePlaybook records one use of a playbook, u (a zero At is the store's
// now): uses goes up, and successes (verifying it at u.At) or fails, and
// the use is logged (PlaybookUses) in tx. An unknown slug wraps
// ErrNotFound. It returns the playbook as updated.
func (s *Store) UsePlaybook(ctx context.Context, tx *sql.Tx, u PlaybookUse) (Playbook, error) {
	if u.At.IsZero() {
		u.At = s.Now()
	}
	ok, fail, verified := 0, 1, sql.NullTime{}
	if u.Success {
		ok, fail, verified = 1, 0, nullTime(u.At)
	}
	p, err := scanPlaybook(tx.QueryRowContext(ctx, `update playbooks set uses = uses + 1, successes = successes + $3,
		fails = fails + $4, verified_at = coalesce($5, verified_at) where workspace = $1 and slug = $2
		returning `+playbookColumns, u.Workspace, u.Slug, ok, fail, verified))
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("playbook %s of %q: %w", u.Slug, u.Workspace, ErrNotFound)
	}
	if err != nil {
		return p, fmt.Errorf("use playbook %s of %q: %w", u.Slug, u.Workspace, err)
	}
	return p, s.logPlaybookUse(ctx, tx, u)
}

func scanPlaybook(row scanner) (Playbook, error) {
	var p Playbook
	var steps string
	var verified sql.NullTime
	err := row.Scan(&p.Workspace, &p.Slug, &steps, &p.Uses, &p.Successes, &p.Fails, &verified, &p.SessionID, &p.JobID, &p.UpdatedAt)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal([]byte(steps), &p.Steps); err != nil {
		return p, fmt.Errorf("playbook %s of %q: bad steps: %w", p.Slug, p.Workspace, err)
	}
	if verified.Valid {
		p.VerifiedAt = verified.Time.UTC()
	}
	p.UpdatedAt = p.UpdatedAt.UTC()
	return p, nil
}

// Proposal statuses.
const (
	ProposalPending  = "pending"
	ProposalAccepted = "accepted"
	ProposalRejected = "rejected"
)

// ErrNotPending is deciding a proposal that was decided already: a
// decision stands, as the seed's status.json kept it.
var ErrNotPending = errors.New("not pending")

// Proposal is an improvement a retro proposed, and the user's decision.
type Proposal struct {
	ID        string
	Workspace string
	Summary   string
	Detail    string
	Status    string
	SessionID string
	JobID     int64
	CreatedAt time.Time
	// DecidedAt, Note and DecidedBy are set when it was accepted or
	// rejected; DecidedBy is one of the DecidedBy values ("" on a proposal
	// decided before mull kept it).
	DecidedAt time.Time
	Note      string
	DecidedBy string
	// Kind is ProposalRetro ("" reads so) or ProposalHarness: a global
	// harness refinement held by harness.require_global_approval, its
	// Payload the refinement to apply (JSON, the harness service's).
	Kind    string
	Payload string
}

// Proposal kinds. The one-pending-per-workspace rule is the retro's only.
const (
	ProposalRetro   = "retro"
	ProposalHarness = "harness"
)

// Who decided a proposal (Proposal.DecidedBy): the actors (actor.go), a
// person holding the admin token, through the panel, the admin API or the
// CLI, or an agent through the bridge's route (POST
// /v1/proposals/{id}/accept|reject, allowed by proposals.agent_may_decide).
const (
	DecidedByPanel = ActorPanel
	DecidedByAPI   = ActorAPI
	DecidedByCLI   = ActorCLI
	DecidedByAgent = ActorAgent
)

const proposalColumns = `id, workspace, summary, detail, status, session_id, job_id, created_at, decided_at, note, kind, payload, decided_by`

// AddPendingProposal stores a pending proposal unless the workspace already
// has one pending (or this id exists); ok reports whether it was stored.
// The unique index proposals_one_pending holds the rule, so two retros
// adding at once store one: the other's insert does nothing. A proposal of
// kind ProposalHarness is held by its id only.
func (s *Store) AddPendingProposal(ctx context.Context, tx *sql.Tx, p Proposal) (ok bool, err error) {
	var payload *string
	if p.Payload != "" {
		payload = &p.Payload
	}
	res, err := tx.ExecContext(ctx, `insert into proposals (id, workspace, summary, detail, status, session_id, job_id, created_at,
		kind, payload) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) on conflict do nothing`,
		p.ID, p.Workspace, p.Summary, p.Detail, ProposalPending, p.SessionID, p.JobID, utcMicro(p.CreatedAt),
		cmp.Or(p.Kind, ProposalRetro), payload)
	if err != nil {
		return false, fmt.Errorf("add proposal of %q: %w", p.Workspace, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ListProposals lists proposals, oldest first: a workspace's, or every
// workspace's when workspace is "" (a retro's proposal always belongs to
// its session's workspace, never to the global library). Statuses, when
// given, keep the proposals in one of them.
func (s *Store) ListProposals(ctx context.Context, q querier, workspace string, statuses ...string) ([]Proposal, error) {
	where, args := "1 = 1", []any{}
	if workspace != "" {
		args = append(args, workspace)
		where += " and workspace = $1"
	}
	if len(statuses) > 0 {
		ph := make([]string, len(statuses))
		for i, st := range statuses {
			args = append(args, st)
			ph[i] = "$" + strconv.Itoa(len(args))
		}
		where += " and status in (" + strings.Join(ph, ", ") + ")"
	}
	rows, err := q.QueryContext(ctx, `select `+proposalColumns+` from proposals where `+where+` order by created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list proposals of %q: %w", workspace, err)
	}
	defer rows.Close()
	var out []Proposal
	for rows.Next() {
		p, err := scanProposal(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// GetProposal reads one proposal, or an error wrapping ErrNotFound.
func (s *Store) GetProposal(ctx context.Context, q querier, id string) (Proposal, error) {
	p, err := scanProposal(q.QueryRowContext(ctx, `select `+proposalColumns+` from proposals where id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("proposal %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return p, fmt.Errorf("read proposal %s: %w", id, err)
	}
	return p, nil
}

// DecideProposal records the decision on a pending proposal: status
// (ProposalAccepted or ProposalRejected), a note, who decided (by, one of
// DecidedByPanel, DecidedByAPI, DecidedByCLI or DecidedByAgent; a blank
// or unknown one is refused) and when. A proposal decided already is left alone and reported with an error wrapping
// ErrNotPending that names its status; an unknown id wraps ErrNotFound.
// It returns the proposal as decided.
func (s *Store) DecideProposal(ctx context.Context, tx *sql.Tx, id, status, note, by string, at time.Time) (Proposal, error) {
	if status != ProposalAccepted && status != ProposalRejected {
		return Proposal{}, fmt.Errorf("decide proposal %s: status %q is not %s or %s", id, status, ProposalAccepted, ProposalRejected)
	}
	if strings.TrimSpace(by) == "" {
		return Proposal{}, fmt.Errorf("decide proposal %s: no decider: say who decides (store.DecidedBy…)", id)
	}
	if err := CheckActor("decide proposal "+id, by); err != nil {
		return Proposal{}, err
	}
	p, err := scanProposal(tx.QueryRowContext(ctx, `update proposals set status = $2, note = $3, decided_at = $4, decided_by = $6
		where id = $1 and status = $5 returning `+proposalColumns, id, status, note, utcMicro(at), ProposalPending, by))
	if !errors.Is(err, sql.ErrNoRows) {
		if err != nil {
			return p, fmt.Errorf("decide proposal %s: %w", id, err)
		}
		return p, nil
	}
	if p, err = s.GetProposal(ctx, tx, id); err != nil {
		return p, err
	}
	return p, fmt.Errorf("proposal %s is already %s (%s): %w", id, p.Status, p.DecidedAt.Format(time.RFC3339), ErrNotPending)
}

func scanProposal(row scanner) (Proposal, error) {
	var p Proposal
	var decided sql.NullTime
	var payload sql.NullString
	err := row.Scan(&p.ID, &p.Workspace, &p.Summary, &p.Detail, &p.Status, &p.SessionID, &p.JobID, &p.CreatedAt, &decided, &p.Note,
		&p.Kind, &payload, &p.DecidedBy)
	if err != nil {
		return p, err
	}
	p.Payload = payload.String
	p.CreatedAt = p.CreatedAt.UTC()
	if decided.Valid {
		p.DecidedAt = decided.Time.UTC()
	}
	return p, nil
}
