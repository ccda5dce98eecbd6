package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
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
}

// RetroRun marks a retro job applied; Counts is JSON.
type RetroRun struct {
	JobID     int64
	SessionID string
	Workspace string
	AppliedAt time.Time
	Counts    string
}

// PutHandoff replaces a workspace's handoff.
func (s *Store) PutHandoff(ctx context.Context, tx *sql.Tx, h Handoff) error {
	_, err := tx.ExecContext(ctx, `insert into handoffs (workspace, text, session_id, job_id, recorded_at)
		values ($1, $2, $3, $4, $5) on conflict (workspace) do update set text = excluded.text,
		session_id = excluded.session_id, job_id = excluded.job_id, recorded_at = excluded.recorded_at`,
		h.Workspace, h.Text, h.SessionID, h.JobID, utcMicro(h.RecordedAt))
	if err != nil {
		return fmt.Errorf("put handoff of %q: %w", h.Workspace, err)
	}
	return nil
}

// GetHandoff reads a workspace's handoff; ok is false when it has none.
func (s *Store) GetHandoff(ctx context.Context, q querier, workspace string) (h Handoff, ok bool, err error) {
	err = q.QueryRowContext(ctx, `select workspace, text, session_id, job_id, recorded_at from handoffs where workspace = $1`,
		workspace).Scan(&h.Workspace, &h.Text, &h.SessionID, &h.JobID, &h.RecordedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return h, false, nil
	}
	if err != nil {
		return h, false, fmt.Errorf("read handoff of %q: %w", workspace, err)
	}
	h.RecordedAt = h.RecordedAt.UTC()
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

// Playbook is a reusable procedure of a workspace, keyed by slug.
type Playbook struct {
	Workspace string
	Slug      string
	Steps     []string
	Uses      int
	Successes int
	Fails     int
	SessionID string
	JobID     int64
	UpdatedAt time.Time
}

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
	rows, err := q.QueryContext(ctx, `select workspace, slug, steps, uses, successes, fails, session_id, job_id, updated_at
		from playbooks where workspace = $1 order by slug`, workspace)
	if err != nil {
		return nil, fmt.Errorf("list playbooks of %q: %w", workspace, err)
	}
	defer rows.Close()
	var out []Playbook
	for rows.Next() {
		var p Playbook
		var steps string
		if err := rows.Scan(&p.Workspace, &p.Slug, &steps, &p.Uses, &p.Successes, &p.Fails, &p.SessionID, &p.JobID, &p.UpdatedAt); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(steps), &p.Steps); err != nil {
			return nil, fmt.Errorf("playbook %s of %q: bad steps: %w", p.Slug, workspace, err)
		}
		p.UpdatedAt = p.UpdatedAt.UTC()
		out = append(out, p)
	}
	return out, rows.Err()
}

// Proposal statuses.
const (
	ProposalPending  = "pending"
	ProposalAccepted = "accepted"
	ProposalRejected = "rejected"
)

// Proposal is an improvement a retro proposed.
type Proposal struct {
	ID        string
	Workspace string
	Summary   string
	Detail    string
	Status    string
	SessionID string
	JobID     int64
	CreatedAt time.Time
}

// AddPendingProposal stores a pending proposal unless the workspace already
// has one pending (or this id exists); ok reports whether it was stored.
func (s *Store) AddPendingProposal(ctx context.Context, tx *sql.Tx, p Proposal) (ok bool, err error) {
	res, err := tx.ExecContext(ctx, `insert into proposals (id, workspace, summary, detail, status, session_id, job_id, created_at)
		select $1, $2, $3, $4, $5, $6, $7, $8
		where not exists (select 1 from proposals where workspace = $2 and status = $5)
		on conflict (id) do nothing`,
		p.ID, p.Workspace, p.Summary, p.Detail, ProposalPending, p.SessionID, p.JobID, utcMicro(p.CreatedAt))
	if err != nil {
		return false, fmt.Errorf("add proposal of %q: %w", p.Workspace, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ListProposals lists a workspace's proposals, oldest first.
func (s *Store) ListProposals(ctx context.Context, q querier, workspace string) ([]Proposal, error) {
	rows, err := q.QueryContext(ctx, `select id, workspace, summary, detail, status, session_id, job_id, created_at
		from proposals where workspace = $1 order by created_at, id`, workspace)
	if err != nil {
		return nil, fmt.Errorf("list proposals of %q: %w", workspace, err)
	}
	defer rows.Close()
	var out []Proposal
	for rows.Next() {
		var p Proposal
		if err := rows.Scan(&p.ID, &p.Workspace, &p.Summary, &p.Detail, &p.Status, &p.SessionID, &p.JobID, &p.CreatedAt); err != nil {
			return nil, err
		}
		p.CreatedAt = p.CreatedAt.UTC()
		out = append(out, p)
	}
	return out, rows.Err()
}
