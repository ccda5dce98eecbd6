package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/overhead"
	"github.com/mullhq/mull/store"
)

// SessionDetail is GET /v1/sessions/{id} and `mull sessions show --json`:
// the session, the agent's usage in it, its import, and its last events.
type SessionDetail struct {
	store.Session
	// Usage is the agent's own usage in the session, priced (llm.prices).
	Usage overhead.Agent `json:"usage"`
	// Import is how its import from DSH's logs stands (complete, waiting,
	// incomplete with the reason); absent when mull never read a log of it.
	Import     *store.SessionImport `json:"import,omitempty"`
	LastEvents []store.Event        `json:"last_events"`
}

// LoadSession reads session id's detail with its last n events; an
// unknown id is store.ErrNotFound.
func LoadSession(ctx context.Context, st *store.Store, prices llm.Pricing, id string, n int) (SessionDetail, error) {
	var d SessionDetail
	var err error
	if d.Session, err = st.GetSession(ctx, id); err != nil {
		return d, err
	}
	if d.LastEvents, err = st.SessionEvents(ctx, id, n); err != nil {
		return d, err
	}
	d.LastEvents = nonNil(d.LastEvents)
	if d.Usage, err = overhead.ForSession(ctx, st, prices, id); err != nil {
		return d, err
	}
	d.Import, err = st.SessionImport(ctx, id)
	return d, err
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
	d, err := LoadSession(r.Context(), s.deps.Store, llm.NewPricing(s.deps.Config.LLM), r.PathValue("id"), n)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
	default:
		writeJSON(w, http.StatusOK, d)
	}
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
