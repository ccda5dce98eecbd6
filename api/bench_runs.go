package api

import (
	"net/http"
	"strings"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/learn/bench"
)

// runRequest is POST /v1/admin/bench/runs's body.
type runRequest struct {
	RefinementID string `json:"refinement_id"`
	Reference    string `json:"reference_snapshot_id"`
	Set          string `json:"set"`
	Runs         int    `json:"runs"`
	Workspace    string `json:"workspace"`
}

// benchStartRun is POST /v1/admin/bench/runs {refinement_id,
// reference_snapshot_id, set?, runs?, workspace?}: 202 {run}, its workflow
// started; follow it with GET /v1/admin/bench/runs/{id}. A candidate that
// is not the reference plus exactly that refinement is 409 with code
// benchmark:run:candidate-delta, and nothing is stored or run.
func (s *Server) benchStartRun(w http.ResponseWriter, r *http.Request) {
	var in runRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	switch {
	case strings.TrimSpace(in.RefinementID) == "":
		writeField(w, "refinement_id", "required: the refinement to verify")
		return
	case strings.TrimSpace(in.Reference) == "":
		writeField(w, "reference_snapshot_id", "required: the snapshot captured before the refinement applied")
		return
	}
	run, err := s.deps.Bench.StartRun(r.Context(), s.deps.Client, benches.RunRequest{
		Refinement: strings.TrimSpace(in.RefinementID), Reference: strings.TrimSpace(in.Reference),
		Set: strings.TrimSpace(in.Set), Runs: in.Runs, Workspace: in.Workspace, By: "admin"})
	s.writeStarted(w, run, err)
}

// memoryRunRequest is POST /v1/admin/bench/memory's body.
type memoryRunRequest struct {
	Workspace string `json:"workspace"`
	Set       string `json:"set"`
	Runs      int    `json:"runs"`
}

// benchStartMemory is POST /v1/admin/bench/memory {workspace, set,
// runs?}: a memory A/B run, the set's frozen cases without memory
// (reference) and with the workspace's digest (candidate). 202 {run}.
func (s *Server) benchStartMemory(w http.ResponseWriter, r *http.Request) {
	var in memoryRunRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	switch {
	case strings.TrimSpace(in.Workspace) == "":
		writeField(w, "workspace", "required: the workspace whose digest the candidate side is shown")
		return
	case strings.TrimSpace(in.Set) == "":
		writeField(w, "set", "required: the set of frozen cases to run")
		return
	}
	run, err := s.deps.Bench.StartMemoryRun(r.Context(), s.deps.Client, benches.MemoryRunRequest{
		Workspace: in.Workspace, Set: strings.TrimSpace(in.Set), Runs: in.Runs, By: "admin"})
	s.writeStarted(w, run, err)
}

// writeStarted answers a started run: 202 {run, follow}.
func (s *Server) writeStarted(w http.ResponseWriter, run benches.Run, err error) {
	if err != nil {
		writeBenchError(w, err)
		return
	}
	if run.Cells == nil {
		run.Cells = []bench.Cell{}
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"run": run, "follow": "GET /v1/admin/bench/runs/" + run.ID})
}

// benchRuns is GET /v1/admin/bench/runs?kind=&status=&limit=, newest
// first, without cells.
func (s *Server) benchRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := benches.RunFilter{Kind: q.Get("kind"), Status: q.Get("status")}
	if field, problem := CheckRunFilter(f); field != "" {
		writeField(w, field, problem)
		return
	}
	var ok bool
	if f.Limit, ok = harnessLimit(w, r); !ok {
		return
	}
	list, err := s.deps.Bench.Runs(r.Context(), f)
	if err != nil {
		writeBenchError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": nonNil(list)})
}

// benchRun is GET /v1/admin/bench/runs/{id}: the run with every cell (its
// evidence, and a DSH cell's session log), the decision once made, and
// its progress (cells done, failed, tokens, cost).
func (s *Server) benchRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.deps.Bench.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		writeBenchError(w, err)
		return
	}
	if run.Cells == nil {
		run.Cells = []bench.Cell{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": run})
}
