package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/mullhq/mull/dlq"
)

func (s *Server) dlqList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := dlq.Filter{Kind: q.Get("kind")}
	if v := q.Get("since"); v != "" {
		since, err := dlq.ParseSince(v, s.deps.Now())
		if err != nil {
			writeError(w, http.StatusBadRequest, "since: "+err.Error())
			return
		}
		f.Since = since
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit: want a positive whole number, got "+strconv.Quote(v))
			return
		}
		f.Limit = n
	}
	letters, err := dlq.List(r.Context(), s.deps.Client, f)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"dead_letters": nonNil(letters), "count": len(letters)})
}

func (s *Server) dlqShow(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "id: want a job id, got "+strconv.Quote(r.PathValue("id")))
		return
	}
	l, err := dlq.Get(r.Context(), s.deps.Client, id)
	switch {
	case errors.Is(err, dlq.ErrNoJob):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, dlq.ErrNotDead):
		writeError(w, http.StatusConflict, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
	default:
		writeJSON(w, http.StatusOK, l)
	}
}

// retryRequest selects dead letters: ids, or a kind, or all.
type retryRequest struct {
	IDs    []int64 `json:"ids"`
	Kind   string  `json:"kind"`
	All    bool    `json:"all"`
	DryRun bool    `json:"dry_run"`
}

func (s *Server) dlqRetry(w http.ResponseWriter, r *http.Request) {
	var req retryRequest
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := dlq.Retry(r.Context(), s.deps.Client, dlq.Selector{IDs: req.IDs, Kind: req.Kind, All: req.All}, req.DryRun)
	var bad *dlq.SelectorError
	switch {
	case errors.As(err, &bad):
		writeError(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	retried := 0
	for _, x := range res {
		if x.Retried {
			retried++
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": nonNil(res), "retried": retried, "dry_run": req.DryRun})
}

// purgeRequest deletes dead letters older than a duration.
type purgeRequest struct {
	OlderThan string `json:"older_than"`
	Kind      string `json:"kind"`
	DryRun    bool   `json:"dry_run"`
}

func (s *Server) dlqPurge(w http.ResponseWriter, r *http.Request) {
	var req purgeRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.OlderThan == "" {
		writeError(w, http.StatusBadRequest, `older_than: required, for example "720h"`)
		return
	}
	d, err := dlq.ParseAge(req.OlderThan)
	if err != nil {
		writeField(w, "older_than", err.Error())
		return
	}
	purged, err := dlq.Purge(r.Context(), s.deps.Client, d, s.deps.Now(), req.Kind, req.DryRun)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"purged": nonNil(purged), "count": len(purged), "dry_run": req.DryRun})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
