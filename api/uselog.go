package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/mullhq/mull/store"
)

// routesUseLog mounts the use log behind the admin token, as the panel
// shows it: the rows behind a memory's uses and a playbook's uses,
// successes and fails, newest first, with the totals and how much of them
// the log lists (a total counted before the log has no rows).
func (s *Server) routesUseLog() {
	s.mux.Handle("GET /v1/admin/memories/{id}/uses", s.admin(s.withMemories(s.memoryUses)))
	s.mux.Handle("GET /v1/admin/playbooks/uses", s.admin(s.withMemories(s.playbookUses)))
}

// maxUsesPage caps ?limit of the use log's routes.
const maxUsesPage = 500

// pageParams reads ?limit (default 50, at most maxUsesPage) and ?offset;
// it answers 400 itself.
func pageParams(w http.ResponseWriter, r *http.Request) (limit, offset int, ok bool) {
	limit = 50
	q := r.URL.Query()
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxUsesPage {
			writeField(w, "limit", "want a whole number from 1 to "+strconv.Itoa(maxUsesPage)+", got "+strconv.Quote(v))
			return 0, 0, false
		}
		limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeField(w, "offset", "want a whole number, 0 or more, got "+strconv.Quote(v))
			return 0, 0, false
		}
		offset = n
	}
	return limit, offset, true
}

// memoryUses serves GET /v1/admin/memories/{id}/uses[?limit=&offset=]:
// memories.MemoryUses.
func (s *Server) memoryUses(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeField(w, "id", "want a memory's id (a positive number), got "+strconv.Quote(r.PathValue("id")))
		return
	}
	limit, offset, ok := pageParams(w, r)
	if !ok {
		return
	}
	out, err := s.deps.Memories.Uses(r.Context(), id, limit, offset)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no memory "+strconv.FormatInt(id, 10))
	case err != nil:
		writeError(w, http.StatusInternalServerError, "memory uses: "+err.Error())
	default:
		writeJSON(w, http.StatusOK, out)
	}
}

// playbookUses serves GET /v1/admin/playbooks/uses?workspace=W[&slug=S]
// [&outcome=success|fail][&limit=&offset=]: memories.PlaybookUses.
func (s *Server) playbookUses(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.PlaybookUseFilter{Workspace: strings.TrimSpace(q.Get("workspace")), Slug: strings.TrimSpace(q.Get("slug")), Outcome: q.Get("outcome")}
	switch {
	case f.Workspace == "":
		writeField(w, "workspace", "required (the DSH cwd)")
		return
	case f.Outcome != "" && f.Outcome != store.OutcomeSuccess && f.Outcome != store.OutcomeFail:
		writeField(w, "outcome", "want "+store.OutcomeSuccess+" or "+store.OutcomeFail+", got "+strconv.Quote(f.Outcome))
		return
	}
	var ok bool
	if f.Limit, f.Offset, ok = pageParams(w, r); !ok {
		return
	}
	out, err := s.deps.Memories.PlaybookUses(r.Context(), f)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no playbook "+f.Slug+" in workspace "+f.Workspace)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "playbook uses: "+err.Error())
	default:
		writeJSON(w, http.StatusOK, out)
	}
}
