package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/jobs/consolidate"
	"github.com/mullhq/mull/store"
)

func (s *Server) routesConsolidate() {
	s.mux.Handle("GET /v1/admin/consolidate", s.admin(s.consolidateStatus))
	s.mux.Handle("POST /v1/admin/consolidate", s.admin(s.consolidateRun))
}

// consolidateState is one workspace's consolidation state as the admin API
// shows it: the times are null until a run started or finished, and the
// last counts are the JSON object the derive step stored, not a string.
type consolidateState struct {
	Workspace      string          `json:"workspace"`
	Watermark      int64           `json:"watermark"`
	SessionsSince  int             `json:"sessions_since"`
	RunID          string          `json:"run_id"`
	LastStartedAt  *time.Time      `json:"last_started_at"`
	LastFinishedAt *time.Time      `json:"last_finished_at"`
	LastCounts     json.RawMessage `json:"last_counts"`
	LastJobID      int64           `json:"last_job_id"`
	LastNote       string          `json:"last_note"`
	// LastRunID is the run last_note is about ("" when it skipped).
	LastRunID string `json:"last_run_id"`
}

func stateOut(st store.ConsolidateState) consolidateState {
	counts := json.RawMessage(st.LastCounts)
	if !json.Valid(counts) {
		counts = json.RawMessage("{}")
	}
	return consolidateState{Workspace: st.Workspace, Watermark: st.Watermark, SessionsSince: st.SessionsSince,
		RunID: st.RunID, LastStartedAt: timeOrNull(st.LastStartedAt), LastFinishedAt: timeOrNull(st.LastFinishedAt),
		LastCounts: counts, LastJobID: st.LastJobID, LastNote: st.LastNote, LastRunID: st.LastRunID}
}

func timeOrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// consolidateStatus serves GET /v1/admin/consolidate[?workspace=W]: every
// workspace's state, or one's. "?workspace=" is the global library, so
// presence, not emptiness, selects one.
func (s *Server) consolidateStatus(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	var states []store.ConsolidateState
	if q.Has("workspace") {
		ws := q.Get("workspace")
		st, ok, err := s.deps.Store.GetConsolidateState(ctx, s.deps.Store.DB, ws)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		if !ok {
			writeError(w, http.StatusNotFound, "workspace "+strconv.Quote(ws)+
				" has no consolidation state yet (no session ended there and no run)")
			return
		}
		states = append(states, st)
	} else {
		var err error
		if states, err = s.deps.Store.ListConsolidateStates(ctx, s.deps.Store.DB); err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	out := make([]consolidateState, 0, len(states))
	for _, st := range states {
		out = append(out, stateOut(st))
	}
	writeJSON(w, http.StatusOK, map[string]any{"workspaces": out})
}

// consolidateRequest asks for a manual run. Workspace is a pointer because
// "" is the global library: only a missing field is an error.
type consolidateRequest struct {
	Workspace *string `json:"workspace"`
	DryRun    bool    `json:"dry_run"`
}

// consolidateRun serves POST /v1/admin/consolidate: it enqueues a manual
// planner, which skips the cooldown (not a run in flight), and answers 202
// with its job id; the planner's decision lands in the workspace's state.
func (s *Server) consolidateRun(w http.ResponseWriter, r *http.Request) {
	var req consolidateRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Workspace == nil {
		writeField(w, "workspace", `required: a workspace path as 'mull memory list' shows it, or "" for the global library`)
		return
	}
	ctx, ws := r.Context(), *req.Workspace
	ms, err := s.deps.Store.ListMemories(ctx, s.deps.Store.DB, store.MemoryFilter{Workspaces: []string{ws}, All: true, Limit: 1})
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if len(ms) == 0 {
		writeError(w, http.StatusNotFound, "workspace "+strconv.Quote(ws)+" has no memories ('mull memory list' shows the workspaces that have)")
		return
	}
	// Requested makes this run a job of its own rather than one absorbed by
	// a planner already waiting with the same args.
	res, err := s.deps.Client.Insert(ctx, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual,
		Requested: s.deps.Now().UTC().Format(time.RFC3339Nano), DryRun: req.DryRun}, nil)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "enqueue consolidate of "+strconv.Quote(ws)+": "+err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{
		"job_id":    res.Job.ID,
		"workspace": ws,
		"follow":    "mull consolidate status " + strconv.Quote(ws) + " / GET /v1/admin/consolidate?workspace=" + queryValue(ws),
	})
}

// queryValue escapes a query value but keeps a path's slashes, which a
// query may hold, so the follow hint stays readable.
func queryValue(v string) string { return strings.ReplaceAll(url.QueryEscape(v), "%2F", "/") }
