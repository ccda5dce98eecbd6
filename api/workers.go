package api

import (
	"net/http"

	"github.com/mullhq/mull/store"
)

// workers serves GET /v1/admin/workers: every worker process with a
// heartbeat row, its host, pid, queues, start and last beat, and whether
// that beat is within workers.dead_after (live), as `mull workers list`.
func (s *Server) workers(w http.ResponseWriter, r *http.Request) {
	ws, err := s.deps.Store.ListWorkers(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	deadAfter := s.deps.Config.Workers.DeadAfter.D()
	out := store.WorkerStatuses(ws, s.deps.Now(), deadAfter)
	live := 0
	for _, st := range out {
		if st.Live {
			live++
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"workers": out, "live": live, "dead_after": deadAfter.String()})
}
