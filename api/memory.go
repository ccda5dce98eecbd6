package api

import (
	"errors"
	"github.com/mullhq/mull/events"
	"net/http"
	"strconv"
	"strings"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// routesMemory mounts the digest, notices and memory tool routes, behind the
// API token like the rest of what DSH's bridge calls, and the playbook and
// proposal routes the memory service also serves.
func (s *Server) routesMemory() {
	s.mux.Handle("GET /v1/digest", s.apiAuth(s.withMemories(s.getDigest)))
	s.mux.Handle("GET /v1/notices", s.apiAuth(s.withMemories(s.getNotices)))
	s.mux.Handle("POST /v1/memories", s.apiAuth(s.withMemories(s.postMemory)))
	s.mux.Handle("GET /v1/memories/search", s.apiAuth(s.withMemories(s.searchMemories)))
	s.mux.Handle("POST /v1/memories/{id}/invalidate", s.apiAuth(s.withMemories(s.invalidateMemory)))
	s.mux.Handle("POST /v1/memories/{id}/verify", s.apiAuth(s.withMemories(s.verifyMemory(store.ActorAgent))))
	s.mux.Handle("POST /v1/admin/memories/{id}/verify", s.admin(s.withMemories(s.verifyMemory(store.ActorAPI))))
	s.routesPlaybooks()
	s.routesProposals()
}

func (s *Server) withMemories(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.deps.Memories == nil {
			writeError(w, http.StatusServiceUnavailable, "the memory store is not configured on this server")
			return
		}
		h(w, r)
	}
}

// fieldBody is a 400 naming the bad field.
type fieldBody struct {
	Error string `json:"error"`
	Field string `json:"field"`
}

func writeField(w http.ResponseWriter, field, problem string) {
	writeJSON(w, http.StatusBadRequest, fieldBody{Error: field + ": " + problem, Field: field})
}

// workspace is the request's workspace, or the workspace of its session
// when only session is given; it answers 400 itself when there is neither.
func (s *Server) workspace(w http.ResponseWriter, r *http.Request) (string, bool) {
	q := r.URL.Query()
	if ws := q.Get("workspace"); ws != "" {
		return ws, true
	}
	if id := q.Get("session"); id != "" {
		if sess, err := s.deps.Store.GetSession(r.Context(), id); err == nil {
			return sess.Workspace, true
		}
	}
	writeField(w, "workspace", "required (the DSH cwd), or a session mull has events from")
	return "", false
}

func (s *Server) getDigest(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	d, err := s.deps.Memories.DigestFor(r.Context(), ws, r.URL.Query().Get("session"))
	if err != nil {
		s.memErrs.count(ws, false, "digest: "+err.Error(), s.deps.Now())
		writeError(w, http.StatusInternalServerError, "digest: "+err.Error())
		return
	}
	w.Header().Set("ETag", d.ETag)
	w.Header().Set("Cache-Control", "no-cache")
	if etagMatch(r.Header.Get("If-None-Match"), d.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// etagMatch applies If-None-Match's weak comparison (RFC 9110 13.1.2).
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}

func (s *Server) getNotices(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	var after int64
	if a := r.URL.Query().Get("after"); a != "" {
		var err error
		if after, err = strconv.ParseInt(a, 10, 64); err != nil || after < 0 {
			writeField(w, "after", "want the cursor of the last notices (a memory id), got "+strconv.Quote(a))
			return
		}
	}
	n, err := s.deps.Memories.NoticesFor(r.Context(), ws, r.URL.Query().Get("session"), after)
	if err != nil {
		s.memErrs.count(ws, false, "notices: "+err.Error(), s.deps.Now())
		writeError(w, http.StatusInternalServerError, "notices: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, n)
}

// quarantinedBody is a 422: the memory was kept for review, not served.
type quarantinedBody struct {
	Error       string `json:"error"`
	Quarantined bool   `json:"quarantined"`
	ID          int64  `json:"id"`
}

// postMemory is the agent's remember tool. The body is a memory.Write:
// origin, times and quarantine are mull's, and a body that names them is
// refused as an unknown field.
func (s *Server) postMemory(w http.ResponseWriter, r *http.Request) {
	var in memory.Write
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Workspace == "" {
		writeField(w, "workspace", "required (the DSH cwd)")
		return
	}
	// A duplicate the agent vouches for (src user: the human said it) is
	// verified by the agent.
	res, err := s.deps.Memories.Remember(r.Context(), in, memory.Provenance{Origin: memory.OriginTool, By: store.ActorAgent})
	var fe *memory.FieldError
	var qe *memories.QuarantinedError
	if err != nil && !errors.As(err, &qe) {
		s.memErrs.count(in.Workspace, true, "remember: "+err.Error(), s.deps.Now())
	}
	switch {
	case errors.As(err, &fe):
		writeField(w, fe.Field, fe.Problem)
	case errors.As(err, &qe):
		writeJSON(w, http.StatusUnprocessableEntity, quarantinedBody{Error: qe.Error(), Quarantined: true, ID: qe.ID})
	case err != nil:
		writeError(w, http.StatusInternalServerError, "remember: "+err.Error())
	case res.Duplicate:
		res.Memory = memories.AgentView(res.Memory)
		writeJSON(w, http.StatusOK, res)
	default:
		res.Memory = memories.AgentView(res.Memory)
		writeJSON(w, http.StatusCreated, res)
	}
}

// searchResult is one hit as the agent's memory_search tool sees it.
type searchResult struct {
	ID    int64       `json:"id"`
	Kind  memory.Kind `json:"kind"`
	Text  string      `json:"text"`
	Score float64     `json:"score"`
}

func (s *Server) searchMemories(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	limit := 0
	if l := r.URL.Query().Get("limit"); l != "" {
		var err error
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 {
			writeField(w, "limit", "want a positive number, got "+strconv.Quote(l))
			return
		}
	}
	// The session is stored with each hit's use row: checked as the
	// playbook route checks its session_id.
	session := r.URL.Query().Get("session")
	if problem := events.CheckName(session, events.MaxIDLen); problem != "" {
		writeField(w, "session", problem)
		return
	}
	hits, err := s.deps.Memories.Search(r.Context(), memories.Query{Workspace: ws, Text: r.URL.Query().Get("q"), Limit: limit, Session: session})
	var fe *memory.FieldError
	if errors.As(err, &fe) {
		writeField(w, fe.Field, fe.Problem)
		return
	}
	if err != nil {
		s.memErrs.count(ws, false, "search: "+err.Error(), s.deps.Now())
		writeError(w, http.StatusInternalServerError, "search: "+err.Error())
		return
	}
	out := make([]searchResult, len(hits))
	for i, h := range hits {
		out[i] = searchResult{ID: h.ID, Kind: h.Kind, Text: h.Text, Score: h.Score}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": out})
}

// verifyMemory is a person confirming a memory, recorded as verified by
// by: store.ActorAgent on the bridge's route (a human's command through the
// agent), ActorAPI on the admin route (an operator). It is verified now,
// and its src becomes user. It takes no body. 409 refuses an invalidated
// or quarantined memory.
func (s *Server) verifyMemory(by string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil || id < 1 {
			writeField(w, "id", "want a memory id, got "+strconv.Quote(r.PathValue("id")))
			return
		}
		m, err := s.deps.Memories.Verify(r.Context(), id, by)
		var nl *memories.NotLiveError
		switch {
		case errors.Is(err, store.ErrNotFound):
			writeError(w, http.StatusNotFound, "no memory "+strconv.FormatInt(id, 10))
		case errors.As(err, &nl):
			writeError(w, http.StatusConflict, nl.Error())
		case err != nil:
			writeError(w, http.StatusInternalServerError, "verify: "+err.Error())
		default:
			writeJSON(w, http.StatusOK, map[string]any{"memory": memories.AgentView(m)})
		}
	}
}

type invalidateRequest struct {
	Reason       string `json:"reason"`
	SupersededBy int64  `json:"superseded_by,omitempty"`
}

func (s *Server) invalidateMemory(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeField(w, "id", "want a memory id, got "+strconv.Quote(r.PathValue("id")))
		return
	}
	var in invalidateRequest
	if !decodeBody(w, r, &in) {
		return
	}
	m, changed, err := s.deps.Memories.InvalidateByAgent(r.Context(), id, in.Reason, in.SupersededBy)
	var fe *memory.FieldError
	var ge *memories.GovernedError
	switch {
	case errors.As(err, &ge):
		writeError(w, http.StatusConflict, ge.Error())
	case errors.As(err, &fe):
		writeField(w, fe.Field, fe.Problem)
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no memory "+strconv.FormatInt(id, 10))
	case err != nil:
		writeError(w, http.StatusInternalServerError, "invalidate: "+err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"memory": memories.AgentView(m), "changed": changed})
	}
}
