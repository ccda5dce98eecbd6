package api

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
)

// The harness_benchmark tool's actions (the seed's, without reset).
var BenchActions = []string{"new", "add-case", "freeze", "capture-reference", "status", "run"}

// benchmarkRequest is POST /v1/harness/benchmark's body: the seed's
// harness_benchmark arguments, plus the session and run_id (status of one
// run: mull's runs are durable workflows, not one blocking call).
type benchmarkRequest struct {
	Session             string   `json:"session"`
	Action              string   `json:"action"`
	CaseID              string   `json:"case_id"`
	Title               string   `json:"title"`
	Statement           string   `json:"statement"`
	Rubric              string   `json:"rubric"`
	Capability          string   `json:"capability"`
	SnapshotID          string   `json:"snapshot_id"`
	ReferenceSnapshotID string   `json:"reference_snapshot_id"`
	RefinementID        string   `json:"refinement_id"`
	RunID               string   `json:"run_id"`
	Runs                *float64 `json:"runs"`
	// Provider and Model are the seed's; mull's cells use its configured
	// model (llm.model, bench.dsh_model), so they are accepted and not
	// used: every run of a deployment compares like with like.
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// writeBenchAgent answers an agent's error with a code (see BenchError).
func writeBenchAgent(w http.ResponseWriter, action string, err error) {
	status, body := BenchError(action, err)
	writeJSON(w, status, body)
}

// writeBenchCode answers the seed's structured error: code is the part
// after "benchmark:".
func writeBenchCode(w http.ResponseWriter, status int, code, msg string) {
	code = "benchmark:" + code
	writeJSON(w, status, benchBody{Error: code + ": " + msg, Code: code})
}

// present is the seed's stringArg: set and not only blank.
func present(v string) bool { return strings.TrimSpace(v) != "" }

// harnessBenchmark is POST /v1/harness/benchmark {session, action, …}:
// the DSH bridge's harness_benchmark tool. Each action checks its
// arguments before touching the store and answers the seed's fields;
// errors are 400, 404 or 409 {error, code} with the seed's
// benchmark:<action>:<code>. run starts the run's workflow and answers at
// once (202, status "running"); status with run_id follows it.
func (s *Server) harnessBenchmark(w http.ResponseWriter, r *http.Request) {
	var in benchmarkRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	switch in.Action {
	case "new", "add-case", "freeze", "capture-reference", "status", "run":
	case "":
		writeBenchCode(w, http.StatusBadRequest, "unknown-action", "action is required")
		return
	default:
		writeBenchCode(w, http.StatusBadRequest, "unknown-action", "unknown action: "+in.Action)
		return
	}
	sess, ok := s.knownSession(w, r, in.Session)
	if !ok {
		return
	}
	switch in.Action {
	case "new":
		// mull's store needs no initializing: the seed's answer, minus
		// its directory.
		writeCompact(w, http.StatusOK, map[string]any{"action": "new", "ok": true})
	case "add-case":
		s.benchAgentAddCase(w, r, in)
	case "freeze":
		s.benchAgentFreeze(w, r, in)
	case "capture-reference":
		s.benchAgentCapture(w, r, sess, in)
	case "status":
		s.benchAgentStatus(w, r, sess, in)
	case "run":
		s.benchAgentRun(w, r, sess, in)
	}
}

// caseOut is the seed's caseToOutput.
type caseOut struct {
	ID         string     `json:"id"`
	Title      string     `json:"title"`
	Statement  string     `json:"statement"`
	Rubric     string     `json:"rubric"`
	Capability string     `json:"capability,omitempty"`
	State      string     `json:"state"`
	CreatedAt  time.Time  `json:"created_at"`
	FrozenAt   *time.Time `json:"frozen_at,omitempty"`
}

func toCaseOut(c bench.Case) caseOut {
	return caseOut{ID: c.ID, Title: c.Title, Statement: c.Statement, Rubric: c.Rubric, Capability: c.Capability,
		State: string(c.State), CreatedAt: c.CreatedAt, FrozenAt: c.FrozenAt}
}

func (s *Server) benchAgentAddCase(w http.ResponseWriter, r *http.Request, in benchmarkRequest) {
	if !present(in.CaseID) || !present(in.Title) || !present(in.Statement) || !present(in.Rubric) {
		writeBenchCode(w, http.StatusBadRequest, "add-case:missing-argument", "add-case requires case_id, title, statement, and rubric")
		return
	}
	c, err := s.deps.Bench.AddCase(r.Context(), benches.CaseInput{ID: strings.TrimSpace(in.CaseID), Title: in.Title,
		Statement: in.Statement, Rubric: in.Rubric, Capability: strings.TrimSpace(in.Capability)})
	if err != nil {
		writeBenchAgent(w, "add-case", err)
		return
	}
	writeCompact(w, http.StatusOK, map[string]any{"action": "add-case", "ok": true, "case": toCaseOut(c)})
}

func (s *Server) benchAgentFreeze(w http.ResponseWriter, r *http.Request, in benchmarkRequest) {
	if !present(in.CaseID) {
		writeBenchCode(w, http.StatusBadRequest, "freeze:missing-argument", "freeze requires case_id")
		return
	}
	c, err := s.deps.Bench.FreezeCase(r.Context(), strings.TrimSpace(in.CaseID))
	if err != nil {
		writeBenchAgent(w, "freeze", err)
		return
	}
	writeCompact(w, http.StatusOK, map[string]any{"action": "freeze", "ok": true, "case": toCaseOut(c)})
}

// benchAgentCapture captures the session's merged view (its local store
// over the global one), as the seed's capture-reference captures the
// agent's: BEFORE the refinement to verify is applied.
func (s *Server) benchAgentCapture(w http.ResponseWriter, r *http.Request, sess store.Session, in benchmarkRequest) {
	if !present(in.SnapshotID) {
		writeBenchCode(w, http.StatusBadRequest, "capture-reference:missing-argument", "capture-reference requires snapshot_id")
		return
	}
	snap, err := s.deps.Bench.Capture(r.Context(), benches.CaptureRequest{ID: strings.TrimSpace(in.SnapshotID), Session: sess.ID})
	if err != nil {
		writeBenchAgent(w, "capture-reference", err)
		return
	}
	writeCompact(w, http.StatusOK, map[string]any{"action": "capture-reference", "ok": true,
		"snapshot_id": snap.ID, "state_hash": snap.StateHash, "captured_at": snap.CapturedAt})
}

// AgentRuns resolves the agent's runs argument as the seed's resolveRuns:
// absent is bench.default_runs (capped by max_runs); else a whole number
// from 1 to max_runs. code is the seed's code ("run:runs-invalid",
// "run:runs-exceeds-max") when it is not.
func AgentRuns(v *float64, defaultRuns, maxRuns int) (runs int, code, msg string) {
	if v == nil {
		return min(max(defaultRuns, 1), maxRuns), "", ""
	}
	if *v != math.Trunc(*v) || *v < 1 || *v > math.MaxInt32 {
		return 0, "run:runs-invalid", "runs must be a positive integer"
	}
	if int(*v) > maxRuns {
		return 0, "run:runs-exceeds-max", "runs (" + strconv.Itoa(int(*v)) + ") exceeds maxRuns (" + strconv.Itoa(maxRuns) + ")"
	}
	return int(*v), "", ""
}

// benchAgentRun starts a refinement's run, charging the session's
// workspace; the answer comes at once: the cells run as a durable
// workflow, followed with status and run_id.
func (s *Server) benchAgentRun(w http.ResponseWriter, r *http.Request, sess store.Session, in benchmarkRequest) {
	if !present(in.ReferenceSnapshotID) {
		writeBenchCode(w, http.StatusBadRequest, "run:missing-argument", "run requires reference_snapshot_id")
		return
	}
	if !present(in.RefinementID) {
		writeBenchCode(w, http.StatusBadRequest, "run:missing-argument", "run requires refinement_id")
		return
	}
	cfg := s.benchConfig()
	if cfg.Executor == config.BenchExecutorDSH {
		// A DSH cell is a shell-capable agent session on mull's host, run
		// on whatever statements the set holds (an agent may add them):
		// only a person starts those runs.
		writeBenchCode(w, http.StatusForbidden, "run:admin-only",
			"with bench.executor = dsh a run executes DSH sessions on mull's host: an operator starts it (mull bench run, or the admin API)")
		return
	}
	if snap, err := s.deps.Bench.Snapshot(r.Context(), strings.TrimSpace(in.ReferenceSnapshotID)); err == nil && !SnapshotVisible(snap, sess) {
		// Another session's capture holds its local entries: as unknown
		// to this one as the id it does not have.
		writeBenchCode(w, http.StatusNotFound, "run:no-reference", "reference snapshot not found: "+strings.TrimSpace(in.ReferenceSnapshotID))
		return
	}
	runs, code, msg := AgentRuns(in.Runs, cfg.DefaultRuns, cfg.MaxRuns)
	if code != "" {
		writeBenchCode(w, http.StatusBadRequest, code, msg)
		return
	}
	run, err := s.deps.Bench.StartRun(r.Context(), s.deps.Client, benches.RunRequest{
		Refinement: strings.TrimSpace(in.RefinementID), Reference: strings.TrimSpace(in.ReferenceSnapshotID),
		Runs: runs, Workspace: sess.Workspace, By: "agent:" + sess.ID})
	if err != nil {
		writeBenchAgent(w, "run", err)
		return
	}
	writeCompact(w, http.StatusAccepted, map[string]any{"action": "run", "ok": true, "run_id": run.ID,
		"refinement_id": run.RefinementID, "status": "running", "runs": run.Runs, "cells": run.Total,
		"follow": `harness_benchmark {"action":"status","run_id":"` + run.ID + `"}`})
}
