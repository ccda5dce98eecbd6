package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/mullhq/mull/budget"
)

// budget answers GET /v1/admin/budget?day=YYYY-MM-DD: every key's limit,
// reserved, spent and remaining tokens, calls, cache-hit share and cost for
// that budget day (today in the budget zone by default).
func (s *Server) budget(w http.ResponseWriter, r *http.Request) {
	if s.deps.Budget == nil {
		writeError(w, http.StatusServiceUnavailable, "budgets are not enabled on this server")
		return
	}
	day := r.URL.Query().Get("day")
	rep, err := s.deps.Budget.ReportDay(r.Context(), day)
	switch {
	case errors.Is(err, budget.ErrBadDay):
		writeError(w, http.StatusBadRequest, "day: want YYYY-MM-DD, got "+strconv.Quote(day))
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
	default:
		rep.Keys = nonNil(rep.Keys)
		writeJSON(w, http.StatusOK, rep)
	}
}
