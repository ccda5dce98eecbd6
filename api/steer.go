package api

import (
	"bytes"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/mullhq/mull/jobs/retroerror"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/memstatus"
	"github.com/mullhq/mull/store"
)

// routesSteer mounts what the bridge's steering tools and slash commands
// call (issue 16): memory_status, the agent's view of the proposals,
// /forget, /promote and /retro. Behind the API token, as the bridge's
// other routes; the proposal decisions also behind
// proposals.agent_may_decide.
func (s *Server) routesSteer() {
	s.mux.Handle("GET /v1/memory/status", s.apiAuth(s.withMemories(s.memoryStatus)))
	s.mux.Handle("GET /v1/proposals", s.apiAuth(s.withMemories(s.agentProposals)))
	s.mux.Handle("POST /v1/proposals/{id}/accept", s.apiAuth(s.withMemories(s.agentDecide(store.ProposalAccepted))))
	s.mux.Handle("POST /v1/proposals/{id}/reject", s.apiAuth(s.withMemories(s.agentDecide(store.ProposalRejected))))
	s.mux.Handle("POST /v1/memories/forget", s.apiAuth(s.withMemories(s.forgetMemories)))
	s.mux.Handle("POST /v1/memories/promote", s.apiAuth(s.withMemories(s.promoteMemories)))
	s.mux.Handle("POST /v1/sessions/{id}/retro", s.apiAuth(s.sessionRetro))
}

// memoryStatus serves GET /v1/memory/status?workspace=W (or ?session=).
func (s *Server) memoryStatus(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	st, err := memstatus.Read(r.Context(), memstatus.Deps{Store: s.deps.Store, Memories: s.deps.Memories,
		Client: s.deps.Client, Budget: s.deps.Budget}, ws)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "memory status: "+err.Error())
		return
	}
	st.Errors = s.memErrs.of(ws)
	writeJSON(w, http.StatusOK, st)
}

// proposalsHow says where a person decides.
const proposalsHow = "mull proposals accept ID | the panel /proposals"

// agentProposals serves GET /v1/proposals?workspace=W[&status=pending]: a
// workspace's proposals as the agent's memory_proposal tool lists them.
func (s *Server) agentProposals(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	if list, ok := s.proposals(w, r, ws, r.URL.Query().Get("status")); ok {
		writeJSON(w, http.StatusOK, map[string]any{"proposals": nonNil(list),
			"agent_may_decide": s.deps.Config.Proposals.AgentMayDecide, "how": proposalsHow})
	}
}

// agentDecideRefused is the 403 of an agent's decision while
// proposals.agent_may_decide is false: the seed's admin rule.
const agentDecideRefused = "proposals.agent_may_decide is false: a person decides with `mull proposals accept|reject ID` or the panel's /proposals"

// agentHarnessRefused is the 403 of an agent's decision on a harness
// proposal, even while proposals.agent_may_decide is true.
const agentHarnessRefused = "a harness proposal is a global harness change held for a person (harness.require_global_approval): " +
	"decide it with `mull proposals accept|reject ID` or the panel's /proposals; proposals.agent_may_decide covers the retros' proposals only"

// agentDecide is the agent's accept or reject: the admin route's effect,
// allowed only when proposals.agent_may_decide is true, and recorded as
// decided by store.DecidedByAgent.
func (s *Server) agentDecide(status string) http.HandlerFunc {
	decide := s.decideProposal(status, store.DecidedByAgent)
	return func(w http.ResponseWriter, r *http.Request) {
		// The body is checked first, as every route's: a bad one is a 400
		// naming its field whatever the rule says.
		if r.ContentLength != 0 {
			body, ok := readJSONBody(w, r)
			if !ok {
				return
			}
			var in decideRequest
			if err := strictDecode(body, &in); err != nil {
				writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if !s.deps.Config.Proposals.AgentMayDecide {
			writeError(w, http.StatusForbidden, agentDecideRefused)
			return
		}
		id := r.PathValue("id")
		p, err := s.deps.Store.GetProposal(r.Context(), s.deps.Store.DB, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			writeError(w, http.StatusNotFound, "no proposal "+id)
			return
		case err != nil:
			writeError(w, http.StatusInternalServerError, "decide proposal: "+err.Error())
			return
		case p.Kind == store.ProposalHarness:
			// A global harness change waits for a person
			// (harness.require_global_approval), whatever the agents may
			// decide of their retros' proposals: the agent that planned it
			// must not approve its own change to every agent's harness.
			writeError(w, http.StatusForbidden, agentHarnessRefused)
			return
		case r.URL.Query().Get("workspace") == "":
			// Without it any workspace's agent could decide every
			// workspace's proposals.
			writeError(w, http.StatusBadRequest, "workspace is required: an agent decides only its own workspace's proposals (?workspace=)")
			return
		case r.URL.Query().Get("workspace") != p.Workspace:
			writeError(w, http.StatusForbidden, "proposal "+id+" is another workspace's: an agent decides only its own workspace's proposals")
			return
		}
		decide(w, r)
	}
}

// forgetRequest is POST /v1/memories/forget's body.
type forgetRequest struct {
	Workspace    string `json:"workspace"`
	Keywords     string `json:"keywords"`
	Confirm      bool   `json:"confirm"`
	ConfirmToken string `json:"confirm_token"`
}

// staleBody is a confirm refused because the matches changed: the 409
// carries the new dry run, to show and confirm again.
type staleBody struct {
	Error string `json:"error"`
	memories.ForgetPlan
}

// forgetMemories serves POST /v1/memories/forget: the dry run (the matches
// and a token), or with confirm the invalidation of exactly those.
func (s *Server) forgetMemories(w http.ResponseWriter, r *http.Request) {
	var in forgetRequest
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Workspace == "" {
		writeField(w, "workspace", "required (the DSH cwd)")
		return
	}
	ctx := r.Context()
	if !in.Confirm {
		p, err := s.deps.Memories.ForgetPlanFor(ctx, in.Workspace, in.Keywords)
		if s.memoryWriteFailed(w, in.Workspace, "forget", err) {
			return
		}
		writeJSON(w, http.StatusOK, p)
		return
	}
	ids, err := s.deps.Memories.Forget(ctx, in.Workspace, in.Keywords, in.ConfirmToken)
	var stale *memories.StaleForgetError
	if errors.As(err, &stale) {
		writeJSON(w, http.StatusConflict, staleBody{Error: stale.Error(), ForgetPlan: stale.Plan})
		return
	}
	if s.memoryWriteFailed(w, in.Workspace, "forget", err) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"invalidated": nonNil(ids), "count": len(ids)})
}

// memPromoteRequest is POST /v1/memories/promote's body.
type memPromoteRequest struct {
	Workspace string  `json:"workspace"`
	IDs       []int64 `json:"ids"`
}

// promoteMemories serves POST /v1/memories/promote: a person's /promote.
func (s *Server) promoteMemories(w http.ResponseWriter, r *http.Request) {
	var in memPromoteRequest
	if !decodeBody(w, r, &in) {
		return
	}
	for i, id := range in.IDs {
		if id < 1 {
			writeField(w, "ids["+strconv.Itoa(i)+"]", "want a memory id, got "+strconv.FormatInt(id, 10))
			return
		}
	}
	p, err := s.deps.Memories.PromoteByHand(r.Context(), in.Workspace, in.IDs, s.tempDirs())
	if s.memoryWriteFailed(w, in.Workspace, "promote", err) {
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// memoryWriteFailed answers a failed memory write (400 naming a bad
// field, else 500) and counts it; false when err is nil.
func (s *Server) memoryWriteFailed(w http.ResponseWriter, workspace, op string, err error) bool {
	if err == nil {
		return false
	}
	s.memErrs.count(workspace, true, op+": "+err.Error(), s.deps.Now())
	var fe *memory.FieldError
	if errors.As(err, &fe) {
		writeField(w, fe.Field, fe.Problem)
	} else {
		writeError(w, http.StatusInternalServerError, op+": "+err.Error())
	}
	return true
}

func (s *Server) tempDirs() []string {
	if s.deps.TempDirs == nil {
		return []string{os.TempDir()}
	}
	return s.deps.TempDirs
}

// retroAnswer is POST /v1/sessions/{id}/retro's answer.
type retroAnswer struct {
	JobID   int64     `json:"job_id,omitempty"`
	State   string    `json:"state,omitempty"`
	RunAt   time.Time `json:"run_at,omitzero"`
	Message string    `json:"message"`
}

// sessionRetro serves POST /v1/sessions/{id}/retro: the /retro slash
// command. The retro goes through the automatic one's guards
// (retroerror.Hook.Now); with the budget spent it waits for the reset
// rather than being refused its reservation at once. 202 when a job was
// queued, 200 when one already was or there is nothing to learn.
func (s *Server) sessionRetro(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	sess, err := s.deps.Store.GetSession(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no session "+strconv.Quote(id)+": mull has no event of it")
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	var notBefore time.Time
	budgetNote := ""
	if s.deps.Budget != nil {
		k, reset, spent, err := s.deps.Budget.Exhausted(ctx, sess.Workspace, retrosession.Args{}.Kind())
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		if spent {
			notBefore = reset
			budgetNote = "; the budget " + k.Key + " is spent for today, so it waits for the reset"
		}
	}
	cfg := s.deps.Config.Retro
	h := &retroerror.Hook{Store: s.deps.Store, Logger: s.deps.Logger, Rules: retroerror.Rules{
		Debounce: cfg.ErrorDelay.D(), MinGap: cfg.ErrorMinGap.D(), MaxPerSession: cfg.ErrorMaxPerSession}}
	if s.deps.Workspaces != nil {
		h.Workspaces = s.deps.Workspaces
	}
	var a retroerror.Asked
	err = s.deps.Store.InTx(ctx, func(tx *sql.Tx) (err error) {
		a, err = h.Now(ctx, tx, s.deps.Client, sess, notBefore)
		return err
	})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "retro of session "+id+": "+err.Error())
		return
	}
	out := retroAnswer{JobID: a.JobID, State: a.State, Message: a.Message}
	if !a.Enqueued {
		writeJSON(w, http.StatusOK, out)
		return
	}
	out.RunAt, out.Message = a.At.UTC(), a.Message+budgetNote
	writeJSON(w, http.StatusAccepted, out)
}
