package api

import (
	"errors"
	"net/http"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
)

// routesProposals mounts the admin routes over the retros' proposals: list,
// show, and the user's accept or reject.
func (s *Server) routesProposals() {
	s.mux.Handle("GET /v1/admin/proposals", s.admin(s.withMemories(s.listProposals)))
	s.mux.Handle("GET /v1/admin/proposals/{id}", s.admin(s.withMemories(s.showProposal)))
	s.mux.Handle("POST /v1/admin/proposals/{id}/accept", s.admin(s.withMemories(s.decideProposal(store.ProposalAccepted))))
	s.mux.Handle("POST /v1/admin/proposals/{id}/reject", s.admin(s.withMemories(s.decideProposal(store.ProposalRejected))))
}

func (s *Server) listProposals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	list, err := s.deps.Memories.Proposals(r.Context(), q.Get("workspace"), q.Get("status"))
	var fe *memory.FieldError
	switch {
	case errors.As(err, &fe):
		writeField(w, fe.Field, fe.Problem)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "list proposals: "+err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"proposals": list})
	}
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

// decideProposal accepts or rejects a pending proposal. The body may be
// empty on accept.
func (s *Server) decideProposal(status string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in decideRequest
		if r.ContentLength != 0 && !decodeBody(w, r, &in) {
			return
		}
		id := r.PathValue("id")
		d, err := s.deps.Memories.DecideProposal(r.Context(), id, status, in.Note)
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
