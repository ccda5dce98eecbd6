package harnesses

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// rollback is Rollback in tx: the reversal applies to the refinement's
// own scope, against the entries as the refinement left them (an entry
// changed since fails its edit with rule 6), and the refinement is marked
// rolled back by it (applyTx). A rollback that would reverse nothing
// stores nothing and is a ConflictError, so a later retry can still
// apply.
//
// An agent (src ByAgent) may not undo a person's refinement: one whose
// source is admin, or a rollback of one, is a ConflictError saying so.
// An agent's rollback of the global store waits for approval under
// harness.require_global_approval like any global refinement of its
// (needsApproval); an admin's applies at once.
func (s *Service) rollback(ctx context.Context, tx *sql.Tx, id string, src Source) (Applied, error) {
	if strings.TrimSpace(id) == "" {
		return Applied{}, &FieldError{Field: "rollback_id", Problem: "required"}
	}
	target, err := s.store.GetHarnessRefinement(ctx, tx, id)
	if err != nil {
		return Applied{}, err
	}
	if target.RolledBackBy != "" {
		return Applied{}, &ConflictError{Msg: fmt.Sprintf("refinement %s was rolled back already by %s", id, target.RolledBackBy)}
	}
	if src == ByAgent {
		if err := s.agentMayRollBack(ctx, tx, target); err != nil {
			return Applied{}, err
		}
	}
	ref := refinementView(target).Refinement
	plan := harness.RollbackOf(ref)
	return s.applyTx(ctx, tx, ApplyRequest{
		ID: plan.ID, Proposal: plan, Scope: ref.Scope, Baseline: harness.RollbackBaseline(ref), RollbackOf: id,
		Source: src, SessionID: target.SessionID,
	})
}

// agentMayRollBack refuses an agent's rollback of a person's refinement
// (source admin, e.g. a pin), or of a rollback of one (which would apply
// the person's change again behind their back).
func (s *Service) agentMayRollBack(ctx context.Context, tx *sql.Tx, target store.HarnessRefinement) error {
	if bySomeone(target.Source) {
		return &ConflictError{Msg: fmt.Sprintf("refinement %s was made by an admin: an agent cannot roll it back (use the admin API or mull harness rollback)", target.Refinement.ID)}
	}
	if of := target.Refinement.RollbackOf; of != "" {
		orig, err := s.store.GetHarnessRefinement(ctx, tx, of)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil && bySomeone(orig.Source) {
			return &ConflictError{Msg: fmt.Sprintf("refinement %s is the rollback of %s, an admin's refinement: an agent cannot roll it back (use the admin API or mull harness rollback)", target.Refinement.ID, of)}
		}
	}
	return nil
}

// bySomeone: a refinement source that is a person's ("" reads as admin).
func bySomeone(src string) bool { return src == string(ByAdmin) || src == "" }

// setLifecycle is SetLifecycle in tx: one update edit with archive or pin.
func (s *Service) setLifecycle(ctx context.Context, tx *sql.Tx, ref EntryRef, archive, pin *bool, reason string, src Source) (Applied, error) {
	if err := checkRef(ref); err != nil {
		return Applied{}, err
	}
	if (archive == nil) == (pin == nil) {
		return Applied{}, &FieldError{Field: "archive", Problem: "give exactly one of archive and pin"}
	}
	key := ref.Scope.Key()
	if _, err := s.store.LockHarnessScope(ctx, tx, key); err != nil {
		return Applied{}, err
	}
	cur, err := s.state(ctx, tx, ref.Scope)
	if err != nil {
		return Applied{}, err
	}
	var kinds []harness.Kind
	for _, k := range harness.Kinds {
		if _, ok := cur.Get(k, ref.ID); ok {
			kinds = append(kinds, k)
		}
	}
	kind, err := resolveKind(ref, kinds)
	if err != nil {
		return Applied{}, err
	}
	if reason = strings.TrimSpace(reason); reason == "" {
		reason = defaultReason(archive, pin, src)
	}
	e := harness.Edit{Action: harness.Update, Kind: kind, ID: ref.ID, Archive: archive, Pin: pin, Reason: reason}
	return s.applyTx(ctx, tx, ApplyRequest{
		Proposal: harness.Proposal{Summary: fmt.Sprintf("%s %s:%s", strings.ToUpper(reason[:1])+reason[1:], kind, ref.ID), Edits: []harness.Edit{e}},
		Scope:    ref.Scope, Source: src, lifecycle: true,
	})
}

func defaultReason(archive, pin *bool, src Source) string {
	switch {
	case archive != nil && *archive:
		return "archived by " + string(src)
	case archive != nil:
		return "restored by " + string(src)
	case *pin:
		return "pinned by " + string(src)
	}
	return "unpinned by " + string(src)
}

// promote is Promote in tx (the seed's promoteEntry): a copy of the
// session's local entry into the global store, under both scopes' locks.
func (s *Service) promote(ctx context.Context, tx *sql.Tx, session, id string, src Source) (Applied, error) {
	switch {
	case strings.TrimSpace(session) == "":
		return Applied{}, &FieldError{Field: "session", Problem: "required"}
	case strings.TrimSpace(id) == "":
		return Applied{}, &FieldError{Field: "id", Problem: "required"}
	}
	for _, sc := range []harness.Scope{harness.Global, harness.Local(session)} {
		if _, err := s.store.LockHarnessScope(ctx, tx, sc.Key()); err != nil {
			return Applied{}, err
		}
	}
	local, err := s.state(ctx, tx, harness.Local(session))
	if err != nil {
		return Applied{}, err
	}
	global, err := s.state(ctx, tx, harness.Global)
	if err != nil {
		return Applied{}, err
	}
	var hits []harness.Entry
	for _, k := range harness.Kinds {
		if e, ok := local.Get(k, id); ok {
			hits = append(hits, e)
		}
	}
	switch len(hits) {
	case 0:
		return Applied{}, &notFound{msg: "local entry not found: " + id}
	case 1:
	default:
		return Applied{}, &ConflictError{Msg: "ambiguous local id: " + id}
	}
	e := hits[0]
	if _, ok := global.Get(e.Kind, id); ok {
		return Applied{}, &ConflictError{Msg: "global id conflict"}
	}
	meta := e.Metadata
	meta.LastInjectedAt = nil
	edit := harness.Edit{Action: harness.Create, Kind: e.Kind, ID: id, Content: &e.Content, Metadata: &meta,
		Reason: "promote from session wrap-up"}
	if e.Title != "" {
		edit.Title = &e.Title
	}
	if e.Kind == harness.KindSkill && e.Description != "" {
		edit.Description = &e.Description
	}
	return s.applyTx(ctx, tx, ApplyRequest{
		ID:       NewID("promote", s.store.Now().UnixMilli()),
		Proposal: harness.Proposal{Summary: fmt.Sprintf("Promote local %s:%s to global", e.Kind, id), Edits: []harness.Edit{edit}},
		Scope:    harness.Global, Source: src, SessionID: session,
	})
}
