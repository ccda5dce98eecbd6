package api

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
)

// routesPlaybooks mounts the agent's playbook routes, behind the API token:
// the list in the digest's order, and the record of one use.
func (s *Server) routesPlaybooks() {
	s.mux.Handle("GET /v1/playbooks", s.apiAuth(s.withMemories(s.listPlaybooks)))
	s.mux.Handle("POST /v1/playbooks/{slug}/use", s.apiAuth(s.withMemories(s.usePlaybook)))
}

func (s *Server) listPlaybooks(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	list, err := s.deps.Memories.Playbooks(r.Context(), ws)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "list playbooks: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"playbooks": list})
}

// useRequest reports one use of a playbook. Success is a pointer so that a
// body without it is refused rather than read as a failure. The workspace
// may come in the body or, as for GET /v1/playbooks, as ?workspace=.
// SessionID, optional, is the session that followed it: the panel's use
// log links it.
type useRequest struct {
	Workspace string `json:"workspace"`
	Success   *bool  `json:"success"`
	SessionID string `json:"session_id"`
}

func (s *Server) usePlaybook(w http.ResponseWriter, r *http.Request) {
	var in useRequest
	if !decodeBody(w, r, &in) {
		return
	}
	ws, ok := useWorkspace(w, r, in.Workspace)
	if !ok {
		return
	}
	if in.Success == nil {
		writeField(w, "success", "required: true if following the playbook worked, false if not")
		return
	}
	if problem := events.CheckName(in.SessionID, events.MaxIDLen); problem != "" {
		writeField(w, "session_id", problem)
		return
	}
	slug := r.PathValue("slug")
	p, err := s.deps.Memories.UsePlaybook(r.Context(), store.PlaybookUse{Workspace: ws, Slug: slug, Success: *in.Success,
		ReportedBy: store.PlaybookByAgent, SessionID: in.SessionID})
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no playbook "+slug+" in workspace "+ws)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "use playbook: "+err.Error())
	default:
		writeJSON(w, http.StatusOK, p)
	}
}

// useWorkspace is a use's workspace: the body's, else ?workspace=. Both
// given and different is refused: a use counted in the wrong workspace
// would skew another playbook's record. It answers 400 itself.
func useWorkspace(w http.ResponseWriter, r *http.Request, body string) (string, bool) {
	query := r.URL.Query().Get("workspace")
	switch {
	case body != "" && query != "" && body != query:
		writeField(w, "workspace", fmt.Sprintf("the body says %q but ?workspace= says %q; give one, or the same in both", body, query))
		return "", false
	case body == "" && query == "":
		writeField(w, "workspace", "required (the DSH cwd), in the body or as ?workspace=")
		return "", false
	}
	return cmp.Or(body, query), true
}
