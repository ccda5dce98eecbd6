package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mullhq/mull/dlq"
	"github.com/mullhq/mull/store"
)

// llmFilter reads job, kind, workspace, since, until and limit.
func (s *Server) llmFilter(w http.ResponseWriter, r *http.Request) (store.LLMCallFilter, bool) {
	q := r.URL.Query()
	f := store.LLMCallFilter{Kind: q.Get("kind"), Workspace: q.Get("workspace")}
	if v := q.Get("job"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "job: want a job id, got "+strconv.Quote(v))
			return f, false
		}
		f.JobID = id
	}
	var err error
	if f.Since, err = s.timeParam(q.Get("since")); err != nil {
		writeError(w, http.StatusBadRequest, "since: "+err.Error())
		return f, false
	}
	if f.Until, err = s.timeParam(q.Get("until")); err != nil {
		writeError(w, http.StatusBadRequest, "until: "+err.Error())
		return f, false
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeError(w, http.StatusBadRequest, "limit: want a whole number from 1 to 10000, got "+strconv.Quote(v))
			return f, false
		}
		f.Limit = n
	}
	return f, true
}

// llmCalls serves GET /v1/admin/llm/calls: call records, newest first.
func (s *Server) llmCalls(w http.ResponseWriter, r *http.Request) {
	f, ok := s.llmFilter(w, r)
	if !ok {
		return
	}
	calls, err := s.deps.Store.ListLLMCalls(r.Context(), f)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"calls": nonNil(calls), "count": len(calls)})
}

// llmUsage serves GET /v1/admin/llm/usage?by=job|workspace|kind|day.
func (s *Server) llmUsage(w http.ResponseWriter, r *http.Request) {
	f, ok := s.llmFilter(w, r)
	if !ok {
		return
	}
	by := r.URL.Query().Get("by")
	if by == "" {
		by = "day"
	}
	switch by {
	case "job", "workspace", "kind", "day":
	default:
		writeError(w, http.StatusBadRequest, "by: want job, workspace, kind or day, got "+strconv.Quote(by))
		return
	}
	rows, err := s.deps.Store.SumLLMCalls(r.Context(), by, f)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"by": by, "rows": nonNil(rows)})
}

// timeParam reads an optional RFC 3339 time or duration back from now.
func (s *Server) timeParam(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	return dlq.ParseSince(v, s.deps.Now())
}

// llmCallShow serves GET /v1/admin/llm/calls/{id}: one call record with the
// request messages and the model's answer it kept (llm.keep_prompts;
// credentials redacted; response null when none was kept), as
// `mull llm calls show ID`. 404 for an unknown id.
func (s *Server) llmCallShow(w http.ResponseWriter, r *http.Request) {
	c, err := s.deps.Store.GetLLMCall(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNoLLMCall):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, c.Detail())
}
