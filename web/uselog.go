package web

import (
	"database/sql"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// The use log's pages: the rows behind a memory's uses and a playbook's
// uses, successes and fails (store/uselog.go). A total counted before mull
// kept the log has no rows; each page says how many of the total it lists
// and why the rest are not listed, so a number never disagrees with its
// list unexplained.

// usesPer is a page of use rows.
const usesPer = 50

// memoryUsesShown is how many of a memory's newest uses its page shows;
// the rest are on /memories/{id}/uses.
const memoryUsesShown = 5

// useTotals is a total and how much of it the log lists.
type useTotals struct {
	// Total is the running total; Logged the rows behind it; Unlogged the
	// rest (counted before the log, or carried in when written).
	Total, Logged, Unlogged int
}

func totals(total, logged int) useTotals {
	return useTotals{Total: total, Logged: logged, Unlogged: max(total-logged, 0)}
}

// useRow is a memory use as a page shows it.
type useRow struct{ store.MemoryUse }

// What says what the cause means, in a few words.
func (u useRow) What() string {
	switch u.Cause {
	case store.UseSearch:
		return "a search returned it"
	case store.UseWrite:
		if u.Origin != "" {
			return "written again (" + u.Origin + ")"
		}
		return "written again"
	case store.UseMove:
		return "a moved memory repeated it"
	case store.UseRetro:
		return "a retro repeated it"
	case store.UseReflection:
		return "a reflection repeated it"
	}
	return u.Cause
}

func (u useRow) SessionPath() string { return sessionPath(u.SessionID) }
func (u useRow) JobPath() string     { return jobPath(u.JobID) }

func useRows(us []store.MemoryUse) []useRow {
	out := make([]useRow, len(us))
	for i, u := range us {
		out[i] = useRow{u}
	}
	return out
}

// memoryUsesView is /memories/{id}/uses.
type memoryUsesView struct {
	M      store.Memory
	Totals useTotals
	Uses   []useRow
	Pager  Pager
}

func (p *Panel) memoryUses(w http.ResponseWriter, r *http.Request) error {
	if err := p.needStore(); err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return Errorf(http.StatusNotFound, "no memory %q: a memory's id is a positive number", r.PathValue("id"))
	}
	ctx, st := r.Context(), p.deps.Store
	v := memoryUsesView{Pager: pager(r, usesPer)}
	var rows []store.MemoryUse
	// One snapshot: a search committing between the total and its rows
	// would make them disagree.
	err = st.ReadTx(ctx, func(tx *sql.Tx) error {
		var err error
		if v.M, err = st.GetMemory(ctx, tx, id); err != nil {
			return err
		}
		f := store.MemoryUseFilter{MemoryID: id}
		logged, err := st.CountMemoryUses(ctx, tx, f)
		if err != nil {
			return err
		}
		v.Totals = totals(v.M.Uses, logged)
		f.Limit, f.Offset = v.Pager.Limit(), v.Pager.Offset()
		rows, err = st.MemoryUses(ctx, tx, f)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return Errorf(http.StatusNotFound, "no memory %d: it was never recorded (nothing is deleted, so the id is wrong)", id)
	} else if err != nil {
		return err
	}
	v.Uses = useRows(rows[:v.Pager.Trim(len(rows))])
	return p.page(w, r, "memory_uses", "memories", "Uses of memory "+strconv.FormatInt(id, 10), v)
}

// memoryUseSummary fills a memory page's uses: the totals and the newest
// few.
func (p *Panel) memoryUseSummary(r *http.Request, v *memoryView) error {
	ctx, st := r.Context(), p.deps.Store
	// The total is read again with its rows, in one snapshot: the page's
	// memory was read before, and a search may have used it since.
	return st.ReadTx(ctx, func(tx *sql.Tx) error {
		m, err := st.GetMemory(ctx, tx, v.M.ID)
		if err != nil {
			return err
		}
		f := store.MemoryUseFilter{MemoryID: v.M.ID}
		logged, err := st.CountMemoryUses(ctx, tx, f)
		if err != nil {
			return err
		}
		v.UseTotals = totals(m.Uses, logged)
		f.Limit = memoryUsesShown
		rows, err := st.MemoryUses(ctx, tx, f)
		v.Uses = useRows(rows)
		return err
	})
}

// playbookUsesView is /playbooks/uses: a workspace's logged playbook uses,
// of one playbook or all, of one outcome or both.
type playbookUsesView struct {
	Workspace, Slug, Outcome string
	Totals                   memories.UseTotals
	Uses                     []memories.PlaybookUse
	Pager                    Pager
}

func (p *Panel) playbookUses(w http.ResponseWriter, r *http.Request) error {
	if p.deps.Memories == nil {
		return Errorf(http.StatusServiceUnavailable, "the memory service is not configured on this server: playbook uses cannot be shown")
	}
	q := r.URL.Query()
	v := playbookUsesView{Workspace: strings.TrimSpace(q.Get("workspace")), Slug: strings.TrimSpace(q.Get("slug")),
		Outcome: q.Get("outcome"), Pager: pager(r, usesPer)}
	switch {
	case v.Workspace == "":
		return Errorf(http.StatusBadRequest, "workspace: required: the uses of which workspace's playbooks (see /playbooks)")
	case v.Outcome != "" && v.Outcome != store.OutcomeSuccess && v.Outcome != store.OutcomeFail:
		return Errorf(http.StatusBadRequest, "outcome %q: want %s or %s", v.Outcome, store.OutcomeSuccess, store.OutcomeFail)
	}
	out, err := p.deps.Memories.PlaybookUses(r.Context(), store.PlaybookUseFilter{Workspace: v.Workspace, Slug: v.Slug, Outcome: v.Outcome,
		Limit: v.Pager.Per, Offset: v.Pager.Offset()})
	if errors.Is(err, store.ErrNotFound) {
		return Errorf(http.StatusNotFound, "no playbook %q in workspace %s", v.Slug, v.Workspace)
	}
	if err != nil {
		return err
	}
	v.Totals, v.Uses, v.Pager.HasNext = out.Uses, out.Rows, out.Next > 0
	return p.page(w, r, "playbook_uses", "playbooks", "Playbook uses", v)
}

// errorRetrosShown bounds a session page's list of error retros scheduled
// (a session has at most retro_error's MaxPerSession, a few folded aside).
const errorRetrosShown = 20

// errorRetroRows are the scheduling rows behind a session's "N error
// retros scheduled", with how much of the count they explain.
type errorRetroRows struct {
	Rows []store.ErrorRetroSchedule
	// Counted are the rows not folded (the count's); Unlogged the count's
	// schedulings from before the log.
	Counted, Unlogged int
}

func (p *Panel) errorRetroRows(r *http.Request, sessionID string, count int) (errorRetroRows, error) {
	rows, err := p.deps.Store.ErrorRetroSchedules(r.Context(), p.deps.Store.DB, sessionID, errorRetrosShown)
	out := errorRetroRows{Rows: rows}
	for _, row := range rows {
		if !row.Folded {
			out.Counted++
		}
	}
	out.Unlogged = max(count-out.Counted, 0)
	return out, err
}
