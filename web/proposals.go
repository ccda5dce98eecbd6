package web

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// routesProposals mounts the proposals pages: the retros' improvement
// proposals (seed 002's status.json) and the operator's accept or reject.
func (p *Panel) routesProposals() {
	p.get("/proposals", p.proposals)
	p.post("/proposals/{id}/accept", p.decideProposal(store.ProposalAccepted))
	p.post("/proposals/{id}/reject", p.decideProposal(store.ProposalRejected))
}

// proposalsPer is a page of proposals.
const proposalsPer = 20

// proposalStatuses are the statuses the filter offers, in order.
var proposalStatuses = []string{store.ProposalPending, store.ProposalAccepted, store.ProposalRejected}

type proposalsView struct {
	Workspace, Status string
	Workspaces        []string
	Statuses          []string
	// Counts are the proposals by status under the workspace filter.
	Counts map[string]int
	Total  int
	Rows   []proposalRow
	Pager  Pager
	// MaxNote is the longest note a decision takes.
	MaxNote int
	// GlobalLessons: a rejection's lesson goes to the global library
	// (memory scope global), not the proposal's workspace.
	GlobalLessons bool
}

// proposalRow is one proposal as the page shows it: the memories service's
// view (through the render-time gate) and the kind the store keeps.
type proposalRow struct {
	memories.Proposal
	// Harness: a global harness refinement waiting for approval; accept
	// applies it (the harness service decides it, not memories).
	Harness bool
}

func (p *Panel) proposals(w http.ResponseWriter, r *http.Request) error {
	if p.deps.Memories == nil {
		return Errorf(http.StatusServiceUnavailable, "the memory service is not configured on this server: proposals cannot be shown")
	}
	q := r.URL.Query()
	v := proposalsView{Workspace: strings.TrimSpace(q.Get("workspace")), Status: q.Get("status"), Statuses: proposalStatuses,
		Pager: pager(r, proposalsPer), MaxNote: memories.MaxNoteRunes,
		GlobalLessons: memory.Scope(cmp.Or(p.deps.Config.Memory.Scope, string(memory.ScopeWorkspace))).WritesGlobal()}
	if v.Status != "" && !isProposalStatus(v.Status) {
		return Errorf(http.StatusBadRequest, "status %q: want pending, accepted or rejected", v.Status)
	}
	ctx := r.Context()
	var err error
	if v.Workspaces, err = p.deps.Store.ProposalWorkspaces(ctx, 500); err != nil {
		return err
	}
	if v.Workspace != "" && !slices.Contains(v.Workspaces, v.Workspace) {
		v.Workspaces = append(v.Workspaces, v.Workspace)
	}
	if v.Counts, err = p.deps.Store.ProposalStatusCounts(ctx, v.Workspace); err != nil {
		return err
	}
	for _, n := range v.Counts {
		v.Total += n
	}
	rows, err := p.deps.Store.ProposalsPage(ctx, store.ProposalPage{Workspace: v.Workspace, Status: v.Status,
		Limit: v.Pager.Limit(), Offset: v.Pager.Offset()})
	if err != nil {
		return err
	}
	for _, row := range rows[:v.Pager.Trim(len(rows))] {
		// The service's view: summary, detail and note through the
		// render-time gate (a withheld one says so, and may still be
		// decided: it holds its workspace's one pending place).
		view, err := p.deps.Memories.Proposal(ctx, row.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue // decided and pruned between the two reads
		}
		if err != nil {
			return err
		}
		v.Rows = append(v.Rows, proposalRow{Proposal: view, Harness: row.Kind == store.ProposalHarness})
	}
	return p.page(w, r, "proposals", "proposals", "Proposals", v)
}

func isProposalStatus(s string) bool { return slices.Contains(proposalStatuses, s) }

// decideProposal accepts or rejects a pending proposal, as `mull proposals
// accept|reject` and the admin API do: a retro's through
// memories.DecideProposal (a rejection's note becomes a lesson in the same
// transaction), a harness refinement's through the harness service (accept
// applies it).
func (p *Panel) decideProposal(status string) Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		if p.deps.Memories == nil {
			return Errorf(http.StatusServiceUnavailable, "the memory service is not configured on this server")
		}
		id, note := r.PathValue("id"), strings.TrimSpace(r.PostForm.Get("note"))
		ctx := r.Context()
		row, err := p.deps.Store.GetProposal(ctx, p.deps.Store.DB, id)
		if errors.Is(err, store.ErrNotFound) {
			return Errorf(http.StatusNotFound, "no proposal %s", id)
		}
		if err != nil {
			return err
		}
		if row.Kind == store.ProposalHarness {
			return p.decideHarness(w, r, id, status, note)
		}
		d, err := p.deps.Memories.DecideProposal(ctx, id, status, note, store.DecidedByPanel)
		var fe *memory.FieldError
		switch {
		case errors.As(err, &fe):
			return Errorf(http.StatusBadRequest, "%s proposal %s: the %s is %s", verb(status), id, fe.Field, fe.Problem)
		case errors.Is(err, store.ErrNotFound):
			return Errorf(http.StatusNotFound, "no proposal %s", id)
		case errors.Is(err, store.ErrNotPending):
			return Errorf(http.StatusConflict, "%s", err.Error())
		case err != nil:
			return err
		}
		msg := fmt.Sprintf("Proposal %s %s.", id, d.Proposal.Status)
		if d.Lesson != nil {
			msg += " Your note is kept as a lesson of " + workspaceName(d.Lesson.Memory.Workspace) + "."
		}
		return p.done(w, r, "/proposals", msg)
	}
}

// decideHarness decides a harness refinement waiting for approval.
func (p *Panel) decideHarness(w http.ResponseWriter, r *http.Request, id, status, note string) error {
	if p.deps.Harness == nil {
		return Errorf(http.StatusServiceUnavailable, "harness refinement is not configured on this server")
	}
	if n := utf8.RuneCountInString(note); n > memories.MaxNoteRunes {
		return Errorf(http.StatusBadRequest, "the note is %d characters, at most %d", n, memories.MaxNoteRunes)
	}
	_, err := p.deps.Harness.Decide(r.Context(), id, status == store.ProposalAccepted, note, store.DecidedByPanel)
	var fe *harnesses.FieldError
	switch {
	case errors.As(err, &fe):
		return Errorf(http.StatusBadRequest, "%s proposal %s: %s", verb(status), id, fe.Error())
	case errors.Is(err, harnesses.ErrNotFound):
		return Errorf(http.StatusNotFound, "%s", err.Error())
	case errors.Is(err, harnesses.ErrConflict), errors.Is(err, store.ErrNotPending):
		return Errorf(http.StatusConflict, "%s", err.Error())
	case err != nil:
		return err
	}
	return p.done(w, r, "/proposals", fmt.Sprintf("Harness proposal %s %s.", id, status))
}

func verb(status string) string {
	if status == store.ProposalAccepted {
		return "accept"
	}
	return "reject"
}

// workspaceName is a workspace as a sentence names it ("" is the global
// library).
func workspaceName(ws string) string {
	if ws == "" {
		return "the global library"
	}
	return ws
}

// SessionPath is the proposal's source session's page.
func (r proposalRow) SessionPath() string { return sessionPath(r.SessionID) }

// sessionPath is a session's page ("" without a session).
func sessionPath(id string) string {
	if id == "" {
		return ""
	}
	return "/sessions/" + url.PathEscape(id)
}

// jobPath is a River job's page in River UI ("" without a job).
func jobPath(id int64) string {
	if id <= 0 {
		return ""
	}
	return "/riverui/jobs/" + strconv.FormatInt(id, 10)
}

// Decider names who decided, as a sentence says it: "an admin (panel)",
// "an agent", or "someone (not recorded)" for a proposal decided before
// mull recorded it (migration 033).
func (r proposalRow) Decider() string {
	switch {
	case r.DecidedBy == "":
		return "someone (not recorded)"
	case strings.HasPrefix(r.DecidedBy, "admin"), strings.HasPrefix(r.DecidedBy, "agent"):
		return "an " + r.DecidedBy
	}
	return r.DecidedBy
}

// JobPath is the retro job that proposed it, in River UI.
func (r proposalRow) JobPath() string { return jobPath(r.JobID) }
