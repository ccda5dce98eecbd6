package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/overhead"
	"github.com/mullhq/mull/store"
)

// sessionDetail is GET /v1/sessions/{id}: the session and its last events.
type sessionDetail struct {
	store.Session
	// Usage is the agent's own usage in the session, priced (llm.prices).
	Usage overhead.Agent `json:"usage"`
	// Import is how its import from DSH's logs stands (complete, waiting,
	// incomplete with the reason); absent when mull never read a log of it.
	Import     *store.SessionImport `json:"import,omitempty"`
	LastEvents []store.Event        `json:"last_events"`
}

// listSessions answers GET /v1/sessions?workspace=&status=&limit=.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.SessionFilter{Workspace: q.Get("workspace"), Status: q.Get("status")}
	switch f.Status {
	case "", store.SessionOpen, store.SessionEnded, store.SessionIdle:
	default:
		writeError(w, http.StatusBadRequest, "status: "+strconv.Quote(f.Status)+" is not one of open, ended, idle")
		return
	}
	var ok bool
	if f.Limit, ok = queryLimit(w, "limit", q.Get("limit")); !ok {
		return
	}
	list, err := s.deps.Store.ListSessions(r.Context(), f)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": nonNil(list), "count": len(list)})
}

// showSession answers GET /v1/sessions/{id}?events=N (N defaults to 50).
func (s *Server) showSession(w http.ResponseWriter, r *http.Request) {
	n, ok := queryLimit(w, "events", r.URL.Query().Get("events"))
	if !ok {
		return
	}
	sess, err := s.deps.Store.GetSession(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	evs, err := s.deps.Store.SessionEvents(r.Context(), sess.ID, n)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	usage, err := overhead.ForSession(r.Context(), s.deps.Store, llm.NewPricing(s.deps.Config.LLM), sess.ID)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	imp, err := s.deps.Store.SessionImport(r.Context(), sess.ID)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, sessionDetail{Session: sess, Usage: usage, Import: imp, LastEvents: nonNil(evs)})
}

// queryLimit parses an optional positive count; zero means the default.
func queryLimit(w http.ResponseWriter, name, v string) (int, bool) {
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, name+": want a positive whole number, got "+strconv.Quote(v))
		return 0, false
	}
	return n, true
}
