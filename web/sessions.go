package web

import (
	"net/http"
	"slices"

	"github.com/mullhq/mull/store"
)

// routesSessions mounts the sessions pages: the workspaces, the sessions
// (filtered by workspace and status) and one session's timeline with what
// mull learnt from it.
func (p *Panel) routesSessions() {
	p.get("/sessions", p.sessionList)
	p.get("/sessions/{id}", p.sessionPage)
	p.get("/workspaces", p.workspaceList)
}

// sessionStatuses are the filter's choices (store.Session*).
var sessionStatuses = []string{store.SessionOpen, store.SessionIdle, store.SessionEnded}

// workspacesOnSessions bounds the workspace table atop /sessions; the
// rest are on /workspaces.
const workspacesOnSessions = 8

type sessionsView struct {
	// AllWorkspaces: the page is /workspaces, a page of every workspace.
	AllWorkspaces     bool
	Workspace, Status string
	Statuses          []string
	// Workspaces are the most recently active ones (or the filtered one);
	// MoreWorkspaces says /workspaces has more.
	Workspaces     []workspaceRow
	MoreWorkspaces bool
	Sessions       []sessionRow
	Pager          Pager
}

// workspaceRow is a workspace with its cost in dollars.
type workspaceRow struct {
	store.WorkspaceSummary
	CostUSD float64
}

func workspaceRows(list []store.WorkspaceSummary) []workspaceRow {
	out := make([]workspaceRow, len(list))
	for i, w := range list {
		out[i] = workspaceRow{WorkspaceSummary: w, CostUSD: float64(w.CostNanoUSD) / 1e9}
	}
	return out
}

// sessionRow is a session with the counts its list shows.
type sessionRow struct {
	store.Session
	ToolFailures int64
}

func (p *Panel) needStore() error {
	if p.deps.Store == nil {
		return Errorf(http.StatusServiceUnavailable, "this mull has no store configured, so there are no sessions to show")
	}
	return nil
}

func (p *Panel) sessionList(w http.ResponseWriter, r *http.Request) error {
	if err := p.needStore(); err != nil {
		return err
	}
	q := r.URL.Query()
	v := sessionsView{Workspace: q.Get("workspace"), Status: q.Get("status"), Statuses: sessionStatuses, Pager: pager(r, 50)}
	if v.Status != "" && !slices.Contains(sessionStatuses, v.Status) {
		return Errorf(http.StatusBadRequest, "status %q is not one of open, idle, ended", v.Status)
	}
	ctx := r.Context()
	list, err := p.deps.Store.PanelSessions(ctx, store.SessionPage{Workspace: v.Workspace, Status: v.Status,
		Limit: v.Pager.Limit(), Offset: v.Pager.Offset()})
	if err != nil {
		return err
	}
	if v.Sessions, err = p.sessionRows(r, list[:v.Pager.Trim(len(list))]); err != nil {
		return err
	}
	var ws []store.WorkspaceSummary
	if v.Workspace != "" {
		ws, err = p.deps.Store.PanelWorkspaces(ctx, v.Workspace, 1, 0)
	} else if v.Pager.Page == 1 {
		ws, err = p.deps.Store.PanelWorkspaces(ctx, "", workspacesOnSessions+1, 0)
		if len(ws) > workspacesOnSessions {
			ws, v.MoreWorkspaces = ws[:workspacesOnSessions], true
		}
	}
	if err != nil {
		return err
	}
	v.Workspaces = workspaceRows(ws)
	return p.page(w, r, "sessions", "sessions", "Sessions", v)
}

func (p *Panel) sessionRows(r *http.Request, list []store.Session) ([]sessionRow, error) {
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	fails, err := p.deps.Store.SessionToolFailures(r.Context(), ids)
	if err != nil {
		return nil, err
	}
	out := make([]sessionRow, len(list))
	for i, s := range list {
		out[i] = sessionRow{Session: s, ToolFailures: fails[s.ID]}
	}
	return out, nil
}

func (p *Panel) workspaceList(w http.ResponseWriter, r *http.Request) error {
	if err := p.needStore(); err != nil {
		return err
	}
	v := sessionsView{AllWorkspaces: true, Pager: pager(r, 50)}
	list, err := p.deps.Store.PanelWorkspaces(r.Context(), "", v.Pager.Limit(), v.Pager.Offset())
	if err != nil {
		return err
	}
	v.Workspaces = workspaceRows(list[:v.Pager.Trim(len(list))])
	return p.page(w, r, "sessions", "sessions", "Workspaces", v)
}
