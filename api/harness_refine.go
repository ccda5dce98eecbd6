package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/jobs/refinereview"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/learn/trust"
)

// The refine modes of POST /v1/harness/refine (the seed's harness_refine:
// plan new edits, or roll back a refinement by id).
const (
	RefinePlan     = "plan"
	RefineRollback = "rollback"
)

// MaxInstruction caps a refine's focus instruction, in characters: it goes
// into the planner's prompt.
const MaxInstruction = 2000

// refineRequest is POST /v1/harness/refine's body.
type refineRequest struct {
	Session     string `json:"session"`
	Mode        string `json:"mode"`
	Instruction string `json:"instruction"`
	Global      bool   `json:"global"`
	RollbackID  string `json:"rollback_id"`
	// Scope is the store a rollback is of, "local" or "global": required
	// with rollback, so an agent never rolls back the other store by a
	// mistaken default.
	Scope string `json:"scope"`
}

// CheckInstruction says what is wrong with a refine's instruction, or "".
func CheckInstruction(s string) string {
	if n := utf8.RuneCountInString(s); n > MaxInstruction {
		return fmt.Sprintf("at most %d characters, got %d", MaxInstruction, n)
	}
	return ""
}

// harnessRefine is POST /v1/harness/refine: mode plan enqueues a manual
// refine_review (202 {job_id, state, scope}; follow it with GET
// /v1/harness/refine/{job_id}); mode rollback reverses a refinement of the
// given scope now (200 {refinement}).
func (s *Server) harnessRefine(w http.ResponseWriter, r *http.Request) {
	var in refineRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	switch in.Mode {
	case RefinePlan, RefineRollback:
	case "":
		writeField(w, "mode", `required: "plan" or "rollback"`)
		return
	default:
		writeField(w, "mode", `want "plan" or "rollback", got `+strconv.Quote(in.Mode))
		return
	}
	if p := CheckInstruction(in.Instruction); p != "" {
		writeField(w, "instruction", p)
		return
	}
	sess, ok := s.knownSession(w, r, in.Session)
	if !ok {
		return
	}
	if in.Mode == RefinePlan {
		s.enqueueRefine(w, r, sess.ID, sess.Workspace, in.Global, in.Instruction, harnesses.ByAgent)
		return
	}
	s.agentRollback(w, r, sess.ID, in)
}

// agentRollback rolls back a refinement of the scope the agent named: its
// own session's store ("local") or the global one. A refinement of another
// scope (another session's) is not found, as the seed's "no refinement
// found with id <id>".
func (s *Server) agentRollback(w http.ResponseWriter, r *http.Request, session string, in refineRequest) {
	var scope harness.Scope
	switch in.Scope {
	case "local":
		scope = harness.Local(session)
	case "global":
		scope = harness.Global
	case "":
		writeField(w, "scope", `required with rollback: "local" or "global" (the store the refinement is of)`)
		return
	default:
		writeField(w, "scope", `want "local" or "global", got `+strconv.Quote(in.Scope))
		return
	}
	if strings.TrimSpace(in.RollbackID) == "" {
		writeField(w, "rollback_id", "required with rollback: the refinement's id")
		return
	}
	ref, err := s.deps.Harness.Refinement(r.Context(), in.RollbackID)
	if errors.Is(err, harnesses.ErrNotFound) || err == nil && ref.Scope != scope {
		writeError(w, http.StatusNotFound, "no refinement found with id "+in.RollbackID)
		return
	}
	if err != nil {
		writeHarnessError(w, err)
		return
	}
	out, err := s.deps.Harness.Rollback(r.Context(), in.RollbackID, harnesses.ByAgent)
	s.writeApplied(w, out, err)
}

// enqueueRefine inserts a manual refine_review of the session's local store
// (or the global one) for src (the agent's applies on the automatic path,
// a person's does not) and answers 202. The job is unique per scope: while
// one is queued or running, an identical repeat (a manual refine by the
// same requester and session with the same instruction) answers that job
// with duplicate set; any other answers 409 naming it, so an instruction is never dropped
// silently for a job that does not carry it.
func (s *Server) enqueueRefine(w http.ResponseWriter, r *http.Request, session, workspace string, global bool, instruction string, src harnesses.Source) {
	args := refinereview.Args{Session: session, Workspace: workspace, Global: global, Trigger: harness.Manual,
		Instruction: strings.TrimSpace(instruction), Source: src}
	res, err := s.deps.Client.Insert(r.Context(), args, nil)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "enqueue refine_review: "+err.Error())
		return
	}
	if res.UniqueSkippedAsDuplicate {
		var busy *RefineBusyError
		if err := CheckJoin(res.Job, args); errors.As(err, &busy) {
			writeJSON(w, http.StatusConflict, map[string]any{"error": busy.Error(), "job_id": busy.JobID})
			return
		} else if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	follow := "GET /v1/harness/refine/" + strconv.FormatInt(res.Job.ID, 10)
	if session != "" {
		follow += "?session=" + url.QueryEscape(session)
	}
	writeJSON(w, http.StatusAccepted, map[string]any{
		"job_id":    res.Job.ID,
		"state":     res.Job.State,
		"scope":     args.Scope().String(),
		"duplicate": res.UniqueSkippedAsDuplicate,
		"follow":    follow,
	})
}

// RefineBusyError is a manual refine that the queued or running
// refine_review of its store (unique per scope) would swallow: that job is
// not the same request, so joining it would drop this one's instruction.
type RefineBusyError struct {
	JobID int64
}

func (e *RefineBusyError) Error() string {
	return fmt.Sprintf("a review of this store is already queued as job %d; try again after it", e.JobID)
}

// CheckJoin says whether a manual refine want may join existing, the
// refine_review River kept instead of inserting want: only when existing
// is a manual refine by the same requester (agent or admin: they apply
// under different rules) and session with the same instruction (an
// identical repeat); else a *RefineBusyError naming it.
func CheckJoin(existing *rivertype.JobRow, want refinereview.Args) error {
	var got refinereview.Args
	if err := json.Unmarshal(existing.EncodedArgs, &got); err != nil {
		return fmt.Errorf("refine_review job %d: decode args: %w", existing.ID, err)
	}
	if got.Trigger == harness.Manual && requester(got) == requester(want) && got.Session == want.Session &&
		got.Instruction == want.Instruction {
		return nil
	}
	return &RefineBusyError{JobID: existing.ID}
}

// requester is who asked for a manual refine; "" (a job enqueued before
// Args.Source) reads as the admin, as the job reads it.
func requester(a refinereview.Args) harnesses.Source {
	return cmp.Or(a.Source, harnesses.ByAdmin)
}

// RefineStatus is GET /v1/harness/refine/{job_id}'s answer: the job's
// state, its review row once an attempt finished, the refinement it
// applied, and each failed attempt's error.
type RefineStatus struct {
	JobID      int64                     `json:"job_id"`
	State      rivertype.JobState        `json:"state"`
	Attempt    int                       `json:"attempt"`
	Review     *harnesses.ReviewRow      `json:"review,omitempty"`
	Refinement *harnesses.RefinementView `json:"refinement,omitempty"`
	// Pending is the proposal id a global refinement waits as
	// (harness.require_global_approval).
	Pending string   `json:"pending_proposal,omitempty"`
	Errors  []string `json:"errors"`
	// session is the job's Args.Session: the session that started it
	// ("" for a global refine an operator made without one).
	session string
}

// harnessRefineStatus is GET /v1/harness/refine/{job_id}?session=S: the
// agent's copy of a refine it started. Job ids are sequential, so the
// session is required and the job must be its own: a refine of its local
// store, or a global one it enqueued (a global refine an operator made
// without a session is not an agent's); any other is 404, as an unknown
// job. What River and the LLM wrote (errors, the rationale) passes the
// trust gate, and the workspace is left out: this reaches the agent.
func (s *Server) harnessRefineStatus(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("job_id"), 10, 64)
	if err != nil || id < 1 {
		writeField(w, "job_id", "must be a refine_review job's id, a whole number from 1")
		return
	}
	sess, ok := s.knownSession(w, r, r.URL.Query().Get("session"))
	if !ok {
		return
	}
	st, err := RefineJobStatus(r.Context(), s.deps.Client, s.deps.Harness, id)
	if err == nil && st.session != sess.ID {
		err = harnesses.ErrNotFound
	}
	switch {
	case errors.Is(err, harnesses.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no refine_review job %d", id))
	case err != nil:
		writeHarnessError(w, err)
	default:
		writeCompact(w, http.StatusOK, st.forAgent())
	}
}

// withheld stands for a text the trust gate keeps from the agent.
const withheld = "(withheld: the text did not pass mull's trust gate)"

// gateLine is trust.Line with the withheld placeholder.
func gateLine(text string) string {
	if line, ok := trust.Line(text); ok {
		return line
	}
	return withheld
}

// forAgent is the status as an agent may read it: River's errors and the
// review's rationale through the trust gate, no workspace.
func (st RefineStatus) forAgent() RefineStatus {
	out := st
	out.Errors = make([]string, len(st.Errors))
	for i, e := range st.Errors {
		out.Errors[i] = gateLine(e)
	}
	if st.Review != nil {
		rev := *st.Review
		rev.Workspace = ""
		if rev.Rationale != "" {
			rev.Rationale = gateLine(rev.Rationale)
		}
		out.Review = &rev
	}
	return out
}

// jobGetter reads a job: the engine client.
type jobGetter interface {
	JobGet(ctx context.Context, id int64) (*rivertype.JobRow, error)
}

// RefineJobStatus reads a refine_review job, its latest review row and the
// refinement that review names (the CLI's refine prints the same). A job
// of another kind, or none, is harnesses.ErrNotFound.
func RefineJobStatus(ctx context.Context, jobs jobGetter, svc *harnesses.Service, id int64) (RefineStatus, error) {
	job, err := jobs.JobGet(ctx, id)
	if errors.Is(err, rivertype.ErrNotFound) || err == nil && job.Kind != (refinereview.Args{}).Kind() {
		return RefineStatus{}, fmt.Errorf("refine_review job %d: %w", id, harnesses.ErrNotFound)
	}
	if err != nil {
		return RefineStatus{}, err
	}
	var args refinereview.Args
	if err := json.Unmarshal(job.EncodedArgs, &args); err != nil {
		return RefineStatus{}, fmt.Errorf("refine_review job %d: decode args: %w", id, err)
	}
	st := RefineStatus{JobID: job.ID, State: job.State, Attempt: job.Attempt, Errors: []string{}, session: args.Session}
	for _, e := range job.Errors {
		st.Errors = append(st.Errors, e.Error)
	}
	reviews, err := svc.Reviews(ctx, harnesses.ReviewFilter{JobID: id, Limit: 1})
	if err != nil || len(reviews) == 0 {
		return st, err
	}
	st.Review = &reviews[0]
	if rid := st.Review.RefinementID; rid != "" {
		ref, err := svc.Refinement(ctx, rid)
		switch {
		case errors.Is(err, harnesses.ErrNotFound):
			// Not a refinement: the proposal a global one waits as.
			st.Pending = rid
		case err != nil:
			return st, err
		default:
			st.Refinement = &ref
		}
	}
	return st, nil
}
