package web

import (
	"net/http"
	"strings"

	"github.com/mullhq/mull/learn/memory/digest"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// routesPlaybooks mounts the playbooks pages: the reusable procedures
// retros wrote (seed 002's PLAYBOOK:<slug>), per workspace, with their
// track record and stale marks.
func (p *Panel) routesPlaybooks() {
	p.get("/playbooks", p.playbooks)
	p.get("/playbooks/uses", p.playbookUses)
}

// playbooksPer is a page of playbooks, or of workspaces.
const playbooksPer = 25

type playbooksView struct {
	Workspace string
	// State is "", "fresh" or "stale".
	State string
	// Workspaces: without a workspace, those that have playbooks.
	Workspaces []store.PlaybookWorkspace
	// Rows: a workspace's playbooks, in the digest's order.
	Rows []playbookRow
	// Count, Stale, Fresh count the workspace's playbooks (the filter
	// aside).
	Count, Stale, Fresh int
	Pager               Pager
	StaleDays           int
}

// playbookRow is a playbook as the memories service serves it (through
// the render-time gate, rate and stale computed), with where it came from.
type playbookRow struct {
	memories.Playbook
	SessionID string
	JobID     int64
}

// SessionPath and JobPath are the session and the retro job that last
// wrote it.
func (r playbookRow) SessionPath() string { return sessionPath(r.SessionID) }
func (r playbookRow) JobPath() string     { return jobPath(r.JobID) }

func (p *Panel) playbooks(w http.ResponseWriter, r *http.Request) error {
	if p.deps.Memories == nil {
		return Errorf(http.StatusServiceUnavailable, "the memory service is not configured on this server: playbooks cannot be shown")
	}
	q := r.URL.Query()
	v := playbooksView{Workspace: strings.TrimSpace(q.Get("workspace")), State: q.Get("state"), Pager: pager(r, playbooksPer),
		StaleDays: int(digest.PlaybookStaleAfter.Hours() / 24)}
	switch v.State {
	case "", "fresh", "stale":
	default:
		return Errorf(http.StatusBadRequest, "state %q: want fresh or stale", v.State)
	}
	ctx := r.Context()
	if v.Workspace == "" {
		rows, err := p.deps.Store.PlaybookWorkspaces(ctx, p.deps.Store.Now().Add(-digest.PlaybookStaleAfter), v.Pager.Limit(), v.Pager.Offset())
		if err != nil {
			return err
		}
		v.Workspaces = rows[:v.Pager.Trim(len(rows))]
		return p.page(w, r, "playbooks", "playbooks", "Playbooks", v)
	}
	// A workspace's playbooks are few (one per slug a retro named): the
	// service ranks them all, as the digest does, and the page shows a
	// slice of that order.
	list, err := p.deps.Memories.Playbooks(ctx, v.Workspace)
	if err != nil {
		return err
	}
	stored, err := p.deps.Store.ListPlaybooks(ctx, p.deps.Store.DB, v.Workspace)
	if err != nil {
		return err
	}
	from := make(map[string]store.Playbook, len(stored))
	for _, s := range stored {
		from[s.Slug] = s
	}
	var rows []playbookRow
	for _, pb := range list {
		if pb.Stale {
			v.Stale++
		} else {
			v.Fresh++
		}
		if (v.State == "stale" && !pb.Stale) || (v.State == "fresh" && pb.Stale) {
			continue
		}
		rows = append(rows, playbookRow{Playbook: pb, SessionID: from[pb.Slug].SessionID, JobID: from[pb.Slug].JobID})
	}
	v.Count = len(list)
	off := min(v.Pager.Offset(), len(rows))
	rows = rows[off:]
	v.Rows = rows[:v.Pager.Trim(len(rows))]
	return p.page(w, r, "playbooks", "playbooks", "Playbooks", v)
}
