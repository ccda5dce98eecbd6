package harnesses

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// pendingPayload is a held refinement, as the proposal's payload keeps it:
// enough to apply it later under rule 6 against the baseline it was
// planned on.
type pendingPayload struct {
	ID        string           `json:"id"`
	Scope     harness.Scope    `json:"scope"`
	Proposal  harness.Proposal `json:"proposal"`
	Baseline  map[string]int   `json:"baseline"`
	Automatic bool             `json:"automatic"`
	Source    Source           `json:"source"`
	JobID     int64            `json:"job_id,omitempty"`
	SessionID string           `json:"session_id,omitempty"`
	// RollbackOf: an agent's rollback of the global store, held.
	RollbackOf string `json:"rollback_of,omitempty"`
}

// proposalID is the proposal a held refinement waits as.
func proposalID(refinementID string) string { return "harness-" + refinementID }

// needsApproval: with harness.require_global_approval, a refinement of the
// global store waits for a person, except a person's rollback (an agent's
// waits), an admin's archive or pin, and one a person accepted (Decide).
func (s *Service) needsApproval(r ApplyRequest) bool {
	return s.cfg.RequireGlobalApproval && r.Scope.IsGlobal() && (r.RollbackOf == "" || r.Source == ByAgent) && !r.approved &&
		!(r.lifecycle && r.Source == ByAdmin) && len(r.Proposal.Edits) > 0
}

// hold stores r as a pending proposal of kind harness instead of applying
// it. The payload keeps only what may be stored: over-long edits and ones
// the trust gate quarantines are dropped (the quarantined texts kept for
// review), the others as the gate left them (credentials redacted).
func (s *Service) hold(ctx context.Context, tx *sql.Tx, r ApplyRequest, baseline harness.State) (Applied, error) {
	p := pendingPayload{ID: r.ID, Scope: r.Scope, Automatic: r.Automatic, Source: r.Source, JobID: r.JobID,
		SessionID: r.SessionID, RollbackOf: r.RollbackOf, Baseline: map[string]int{}}
	p.Proposal = harness.Proposal{ID: r.Proposal.ID, Summary: gated(r.Proposal.Summary), Edits: []harness.Edit{}}
	kept, _ := lengthChecks(r.Proposal.Edits)
	if err := s.keepQuarantined(ctx, tx, r, kept); err != nil {
		return Applied{}, err
	}
	for _, e := range kept {
		out, _, rejected := harness.GateEdit(e)
		if rejected != "" || !slices.Contains(harness.Kinds, out.Kind) || !slices.Contains(harness.Actions, out.Action) {
			continue // it could not apply; its words are not kept
		}
		p.Proposal.Edits = append(p.Proposal.Edits, out)
		b, _ := baseline.Get(e.Kind, e.ID) // absent: version 0
		p.Baseline[harness.TombstoneKey(e.Kind, e.ID)] = b.Version
	}
	js, err := json.Marshal(p)
	if err != nil {
		return Applied{}, fmt.Errorf("hold refinement %s: %w", r.ID, err)
	}
	id := proposalID(r.ID)
	ok, err := s.store.AddPendingProposal(ctx, tx, store.Proposal{
		ID: id, Summary: p.Proposal.Summary, SessionID: r.SessionID, JobID: r.JobID, CreatedAt: s.store.Now(),
		Detail: fmt.Sprintf("%d edits of the global harness, waiting for approval (harness.require_global_approval)", len(p.Proposal.Edits)),
		Kind:   store.ProposalHarness, Payload: string(js),
	})
	if err != nil {
		return Applied{}, err
	}
	if !ok {
		return Applied{}, &ConflictError{Msg: "refinement " + r.ID + " exists (pending proposal " + id + ")"}
	}
	s.logger.Info("global harness refinement held for approval", "refinement", r.ID, "proposal", id)
	return Applied{Pending: id, Refinement: harness.Refinement{ID: r.ID, Summary: p.Proposal.Summary, Scope: r.Scope}}, nil
}

// decide is Decide in one transaction: the proposal is marked decided
// and, on accept, the refinement applied (rule 6 against its baseline).
func (s *Service) decide(ctx context.Context, tx *sql.Tx, id string, accept bool, note, by string) (Applied, error) {
	p, err := s.store.GetProposal(ctx, tx, id)
	if err != nil {
		return Applied{}, err
	}
	if p.Kind != store.ProposalHarness {
		return Applied{}, &FieldError{Field: "id", Problem: fmt.Sprintf("proposal %s is a %s proposal, not a harness one", id, p.Kind)}
	}
	status := store.ProposalRejected
	if accept {
		status = store.ProposalAccepted
	}
	if _, err := s.store.DecideProposal(ctx, tx, id, status, gated(note), by, s.store.Now()); err != nil {
		if errors.Is(err, store.ErrNotPending) {
			return Applied{}, &ConflictError{Msg: err.Error()}
		}
		return Applied{}, err
	}
	if !accept {
		return Applied{}, nil
	}
	var pl pendingPayload
	if err := json.Unmarshal([]byte(p.Payload), &pl); err != nil {
		return Applied{}, fmt.Errorf("harness proposal %s: payload: %w", id, err)
	}
	return s.applyTx(ctx, tx, ApplyRequest{
		ID: pl.ID, Proposal: pl.Proposal, Scope: pl.Scope, BaselineVersions: pl.Baseline, Automatic: pl.Automatic,
		Source: pl.Source, JobID: pl.JobID, SessionID: pl.SessionID, RollbackOf: pl.RollbackOf, approved: true,
	})
}
