package api

import (
	"net/http"

	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/overhead"
)

func (s *Server) routesReport() {
	s.mux.Handle("GET /v1/admin/report/overhead", s.admin(s.reportOverhead))
}

// reportOverhead serves GET /v1/admin/report/overhead?since=&until=&workspace=:
// the agent's tokens and cost next to mull's own LLM cost, per workspace and
// UTC day (mull report overhead --json).
func (s *Server) reportOverhead(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := overhead.Filter{Workspace: q.Get("workspace")}
	var err error
	if v := q.Get("since"); v != "" {
		if f.Since, err = overhead.ParseSince(v, s.deps.Now()); err != nil {
			writeError(w, http.StatusBadRequest, "since: "+err.Error())
			return
		}
	}
	if v := q.Get("until"); v != "" {
		if f.Until, err = overhead.ParseSince(v, s.deps.Now()); err != nil {
			writeError(w, http.StatusBadRequest, "until: "+err.Error())
			return
		}
	}
	rep, err := overhead.Build(r.Context(), s.deps.Store, llm.NewPricing(s.deps.Config.LLM), f)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
