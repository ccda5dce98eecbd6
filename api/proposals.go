package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// routesProposals mounts the admin routes over the retros' proposals: list,
// show, and the user's accept or reject.
func (s *Server) routesProposals() {
	s.mux.Handle("GET /v1/admin/proposals", s.admin(s.withMemories(s.listProposals)))
	s.mux.Handle("GET /v1/admin/proposals/{id}", s.admin(s.withMemories(s.showProposal)))
	s.mux.Handle("POST /v1/admin/proposals/{id}/accept", s.admin(s.withMemories(s.decideProposal(store.ProposalAccepted, store.DecidedByAPI))))
	s.mux.Handle("POST /v1/admin/proposals/{id}/reject", s.admin(s.withMemories(s.decideProposal(store.ProposalRejected, store.DecidedByAPI))))
}

func (s *Server) listProposals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if list, ok := s.proposals(w, r, q.Get("workspace"), q.Get("status")); ok {
		writeJSON(w, http.StatusOK, map[string]any{"proposals": list})
	}
}

// proposals lists workspace's proposals ("" every workspace's) in status
// ("" any), or answers 400 naming a bad filter, or 500.
func (s *Server) proposals(w http.ResponseWriter, r *http.Request, workspace, status string) ([]memories.Proposal, bool) {
	list, err := s.deps.Memories.Proposals(r.Context(), workspace, status)
	var fe *memory.FieldError
	switch {
	case errors.As(err, &fe):
		writeField(w, fe.Field, fe.Problem)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "list proposals: "+err.Error())
	default:
		return list, true
	}
	return nil, false
}

func (s *Server) showProposal(w http.ResponseWriter, r *http.Request) {
	p, err := s.deps.Memories.Proposal(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no proposal "+r.PathValue("id"))
	case err != nil:
		writeError(w, http.StatusInternalServerError, "show proposal: "+err.Error())
	default:
		writeJSON(w, http.StatusOK, p)
	}
}

// decideRequest is the body of accept and reject; a reject needs the note.
type decideRequest struct {
	Note string `json:"note"`
}

// decideProposal accepts or rejects a pending proposal, recorded as
// decided by by (store.DecidedByAPI on the admin route, …Agent on the
// agent's). The body may be empty on accept.
func (s *Server) decideProposal(status, by string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in decideRequest
		if r.ContentLength != 0 && !decodeBody(w, r, &in) {
			return
		}
		id := r.PathValue("id")
		if p, err := s.deps.Store.GetProposal(r.Context(), s.deps.Store.DB, id); err == nil && p.Kind == store.ProposalHarness {
			s.decideHarnessProposal(w, r, id, status, in.Note, by)
			return
		}
		d, err := s.deps.Memories.DecideProposal(r.Context(), id, status, in.Note, by)
		var fe *memory.FieldError
		switch {
		case errors.As(err, &fe):
			writeField(w, fe.Field, fe.Problem)
		case errors.Is(err, store.ErrNotFound):
			writeError(w, http.StatusNotFound, "no proposal "+id)
		case errors.Is(err, store.ErrNotPending):
			writeError(w, http.StatusConflict, err.Error())
		case err != nil:
			writeError(w, http.StatusInternalServerError, "decide proposal: "+err.Error())
		default:
			writeJSON(w, http.StatusOK, d)
		}
	}
}

// decideHarnessProposal decides a proposal of kind harness: a global
// refinement harness.require_global_approval held. Accept applies it, rule
// 6 against the state it was planned on, in the transaction that marks it
// accepted; reject only marks it (no note needed: no lesson is written).
func (s *Server) decideHarnessProposal(w http.ResponseWriter, r *http.Request, id, status, note, by string) {
	if s.deps.Harness == nil {
		writeError(w, http.StatusServiceUnavailable, "harness refinement is not configured on this server")
		return
	}
	if n := utf8.RuneCountInString(note); n > memories.MaxNoteRunes {
		writeField(w, "note", fmt.Sprintf("%d characters, at most %d", n, memories.MaxNoteRunes))
		return
	}
	out, err := s.deps.Harness.Decide(r.Context(), id, status == store.ProposalAccepted, strings.TrimSpace(note), by)
	if err != nil {
		writeHarnessError(w, err)
		return
	}
	body := map[string]any{"id": id, "kind": store.ProposalHarness, "status": status, "decided_by": by}
	if status == store.ProposalAccepted {
		body["refinement"] = out.Refinement
	}
	writeJSON(w, http.StatusOK, body)
}
