package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
)

// How much the agent's status lists.
const (
	agentStatusSnapshots = 20
	agentStatusRuns      = 10
)

// RunVerdict is a run's status as the seed's tool reports it: ACCEPTED or
// REJECTED once decided, else mull's run status (running, failed,
// cancelled).
func RunVerdict(run benches.Run) string {
	if run.Decision != nil {
		return string(run.Decision.Status)
	}
	return run.Status
}

// snapshotOut and runOut are the seed's SnapshotSummary and RunSummary.
type snapshotOut struct {
	SnapshotID   string    `json:"snapshot_id"`
	RefinementID string    `json:"refinement_id,omitempty"`
	CapturedAt   time.Time `json:"captured_at"`
	StateHash    string    `json:"state_hash"`
}

type runOut struct {
	RunID            string    `json:"run_id"`
	Kind             string    `json:"kind"`
	RefinementID     string    `json:"refinement_id"`
	Status           string    `json:"status"`
	ReferenceOverall *float64  `json:"reference_overall"`
	CandidateOverall *float64  `json:"candidate_overall"`
	CreatedAt        time.Time `json:"created_at"`
}

func toRunOut(run benches.Run) runOut {
	out := runOut{RunID: run.ID, Kind: run.Kind, RefinementID: run.RefinementID, Status: RunVerdict(run), CreatedAt: run.Created}
	if d := run.Decision; d != nil {
		out.ReferenceOverall, out.CandidateOverall = d.ReferenceOverall, d.CandidateOverall
	}
	return out
}

// benchAgentStatus is the status action: with run_id that run's progress
// and decision; without, the seed's listing of cases, snapshots and
// recent runs.
//
// An agent sees only its own: the snapshots its session captured (and the
// global store's), the memory snapshots and runs of its workspace and the
// runs it started. Another session's capture holds that session's local
// entries, another workspace's run that workspace's memory.
func (s *Server) benchAgentStatus(w http.ResponseWriter, r *http.Request, sess store.Session, in benchmarkRequest) {
	if present(in.RunID) {
		id := strings.TrimSpace(in.RunID)
		run, err := s.deps.Bench.Run(r.Context(), id)
		if err == nil && !RunVisible(run, sess) {
			err = &benches.CodedError{Code: "benchmark:status:not-found", Msg: "no benchmark run with id: " + id, Status: http.StatusNotFound}
		}
		if err != nil {
			writeBenchAgent(w, "status", err)
			return
		}
		writeCompact(w, http.StatusOK, AgentRunStatus(run))
		return
	}
	ctx := r.Context()
	cases, err := s.deps.Bench.Cases(ctx, benches.CaseFilter{})
	if err != nil {
		writeBenchAgent(w, "status", err)
		return
	}
	snaps, err := s.deps.Bench.Snapshots(ctx, agentStatusSnapshots)
	if err != nil {
		writeBenchAgent(w, "status", err)
		return
	}
	runs, err := s.deps.Bench.Runs(ctx, benches.RunFilter{Limit: agentStatusRuns})
	if err != nil {
		writeBenchAgent(w, "status", err)
		return
	}
	type caseRow struct {
		ID    string `json:"id"`
		Title string `json:"title"`
		State string `json:"state"`
	}
	out := map[string]any{"action": "status", "ok": true}
	cs := make([]caseRow, len(cases))
	for i, c := range cases {
		cs[i] = caseRow{ID: c.ID, Title: c.Title, State: string(c.State)}
	}
	ss := []snapshotOut{}
	for _, sn := range snaps {
		if SnapshotVisible(sn, sess) {
			ss = append(ss, snapshotOut{SnapshotID: sn.ID, RefinementID: sn.RefinementID, CapturedAt: sn.CapturedAt, StateHash: sn.StateHash})
		}
	}
	rs := []runOut{}
	for _, run := range runs {
		if RunVisible(run, sess) {
			rs = append(rs, toRunOut(run))
		}
	}
	out["cases"], out["snapshots"], out["recent_runs"] = cs, ss, rs
	writeCompact(w, http.StatusOK, out)
}

// AgentRunStatus is one run as the status action answers it: the seed's
// run fields (status ACCEPTED or REJECTED once decided, the overall means,
// regression cases, failed cells, feedback, auto_rollback), and mull's
// progress (cells_done of cells, cells_failed, tokens, cost_usd). The
// judge's feedback passes the trust gate: it is a model's text reaching
// the agent.
func AgentRunStatus(run benches.Run) map[string]any {
	out := map[string]any{"action": "status", "ok": true, "run_id": run.ID, "kind": run.Kind,
		"refinement_id": run.RefinementID, "status": RunVerdict(run), "run_status": run.Status, "runs": run.Runs,
		"cells": run.Total, "cells_done": run.Done, "cells_failed": run.Failed, "tokens": run.Tokens, "cost_usd": run.CostUSD,
		"reference_snapshot_id": run.Reference, "candidate_snapshot_id": run.Candidate}
	d := run.Decision
	if d == nil {
		return out
	}
	feedback := make([]string, len(d.Feedback))
	for i, f := range d.Feedback {
		feedback[i] = gateLine(f)
	}
	out["reference_overall"], out["candidate_overall"] = d.ReferenceOverall, d.CandidateOverall
	out["regression_cases"] = nonNil(d.RegressionCases)
	out["failed_cells"], out["feedback"], out["auto_rollback"] = d.FailedCells, feedback, d.AutoRollback
	out["reasons"], out["per_case"] = nonNil(d.Reasons), nonNilMap(d.PerCase)
	return out
}

func nonNilMap(m map[string]bench.CaseMeans) map[string]bench.CaseMeans {
	if m == nil {
		return map[string]bench.CaseMeans{}
	}
	return m
}

// SnapshotVisible says whether an agent's session may see a snapshot: a
// harness capture of the global store or of its own session, a memory
// snapshot of its own workspace.
func SnapshotVisible(sn bench.Snapshot, sess store.Session) bool {
	if sn.Kind == bench.MemorySnapshot {
		return sn.Workspace == sess.Workspace
	}
	return sn.Session == "" || sn.Session == sess.ID
}

// RunVisible says whether an agent's session may see a run: one it
// started, or one charged to its workspace.
func RunVisible(run benches.Run, sess store.Session) bool {
	return run.By == "agent:"+sess.ID || (run.Workspace != "" && run.Workspace == sess.Workspace)
}
