package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// diffView is a line diff of two texts with its counts.
type diffView struct {
	Lines    []DiffLine
	Ins, Del int
}

func newDiff(a, b string) diffView {
	d := diffView{Lines: lineDiff(a, b)}
	d.Ins, d.Del = diffStats(d.Lines)
	return d
}

// harnessEntryView is /harness/entries/{kind}/{id}: an entry now, and its
// versions, each with its diff from the one before.
type harnessEntryView struct {
	Page    string
	Session string
	Kind    harness.Kind
	ID      string
	// Current is the entry now; nil once it was deleted.
	Current  *harnesses.EntryView
	Versions []versionRow
	Pager    Pager
	// Numbers are every version's number, for the compare form; From
	// and To the compared pair, Compare their diff.
	Numbers  []int
	From, To int
	Compare  *diffView
	// Injections are the sessions the entry reached (the rows its
	// injection count sums), the latest maxInjections; MoreInjections
	// says there are more.
	Injections     []store.HarnessInjection
	MoreInjections bool
}

// maxInjections bounds the entry page's list of sessions it reached.
const maxInjections = 50

// versionRow is a version with its diff from the version before it.
type versionRow struct {
	harnesses.Version
	Prev int
	Diff diffView
}

func (p *Panel) harnessEntry(w http.ResponseWriter, r *http.Request) error {
	if err := p.harnessDown(); err != nil {
		return err
	}
	ctx, q := r.Context(), r.URL.Query()
	v := harnessEntryView{Page: "entry", Session: q.Get("session"), Kind: harness.Kind(r.PathValue("kind")), ID: r.PathValue("id"),
		Pager: pager(r, 20)}
	if !slices.Contains(harness.Kinds, v.Kind) {
		return Errorf(http.StatusNotFound, "%q is not a harness kind (prompt, memory, skill, subagent)", v.Kind)
	}
	ref := harnesses.EntryRef{Scope: harness.Local(v.Session), Kind: v.Kind, ID: v.ID}
	all, err := p.deps.Harness.Versions(ctx, ref)
	if err != nil {
		return harnessError(err)
	}
	cur, err := p.deps.Harness.Get(ctx, ref, time.Time{})
	switch {
	case err == nil:
		v.Current = &cur
		ref.Scope = cur.Scope // a session's page may show a global entry
	case !errors.Is(err, harnesses.ErrNotFound):
		return harnessError(err)
	}
	v.Injections, err = p.deps.Store.EntryInjections(ctx, ref.Scope.Key(), string(v.Kind), v.ID, maxInjections+1, 0)
	if err != nil {
		return err
	}
	if len(v.Injections) > maxInjections {
		v.Injections, v.MoreInjections = v.Injections[:maxInjections], true
	}
	rows := make([]versionRow, len(all))
	for i, ver := range all {
		rows[i] = versionRow{Version: ver}
		v.Numbers = append(v.Numbers, ver.Entry.Version)
		if i > 0 {
			rows[i].Prev = all[i-1].Entry.Version
			rows[i].Diff = newDiff(all[i-1].Entry.Content, ver.Entry.Content)
		}
	}
	slices.Reverse(rows)
	v.Versions = pageOf(rows, &v.Pager)
	v.compare(q, all)
	title := fmt.Sprintf("Harness %s %s", v.Kind, v.ID)
	return p.page(w, r, "harness", "harness", title, v)
}

// compare fills the compared pair from ?from= and ?to= (versions of the
// entry; unknown numbers compare nothing).
func (v *harnessEntryView) compare(q url.Values, all []harnesses.Version) {
	from, _ := strconv.Atoi(q.Get("from"))
	to, _ := strconv.Atoi(q.Get("to"))
	var a, b *harnesses.Version
	for i := range all {
		switch all[i].Entry.Version {
		case from:
			a = &all[i]
		case to:
			b = &all[i]
		}
	}
	if a == nil || b == nil {
		if n := len(all); n > 1 { // the form offers the last change
			v.From, v.To = all[n-2].Entry.Version, all[n-1].Entry.Version
		}
		return
	}
	d := newDiff(a.Entry.Content, b.Entry.Content)
	v.From, v.To, v.Compare = from, to, &d
}

// harnessRefinementView is /harness/refinements/{id}: its edits with
// their diffs, the reviews that made it, the benchmark runs that tested
// it, and the rollback button (with the service's refusal in place).
type harnessRefinementView struct {
	Page    string
	Ref     refinementRow
	Edits   []editRow
	Reviews []reviewRow
	Runs    []store.BenchRun
	// RollbackError is why the service refused the rollback just asked.
	RollbackError string
}

// editRow is an applied (or rejected) edit with the diff it made.
type editRow struct {
	harness.AppliedEdit
	N int
	// Diff is before → after when the edit had content on either side.
	Diff *diffView
	// Version is the entry's version the edit wrote (0: none).
	Version int
}

func (p *Panel) harnessRefinement(w http.ResponseWriter, r *http.Request) error {
	if err := p.harnessDown(); err != nil {
		return err
	}
	v, err := p.refinementView(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	return p.page(w, r, "harness", "harness", "Refinement "+v.Ref.Refinement.ID, v)
}

func (p *Panel) refinementView(r *http.Request, id string) (harnessRefinementView, error) {
	ctx := r.Context()
	ref, err := p.deps.Store.GetHarnessRefinement(ctx, p.deps.Store.DB, id)
	if err != nil {
		return harnessRefinementView{}, harnessError(err)
	}
	v := harnessRefinementView{Page: "refinement", Ref: newRefinementRow(ref)}
	for i, e := range ref.Refinement.Edits {
		row := editRow{AppliedEdit: e, N: i + 1}
		if e.Before != nil || e.After != nil {
			d := newDiff(deref(e.Before), deref(e.After))
			row.Diff = &d
		}
		if e.AfterEntry != nil {
			row.Version = e.AfterEntry.Version
		}
		v.Edits = append(v.Edits, row)
	}
	reviews, err := p.deps.Store.PanelHarnessReviews(ctx, store.PanelReviewFilter{RefinementID: id, Limit: 20})
	if err != nil {
		return v, err
	}
	v.Reviews = reviewRows(reviews)
	if v.Runs, err = p.deps.Store.PanelBenchRuns(ctx, store.PanelBenchRunFilter{RefinementID: id, Limit: 20}); err != nil {
		return v, err
	}
	return v, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// harnessRollback is the rollback button: harnesses.Service.Rollback as
// an admin, as `mull harness rollback` and the admin API do. A rollback
// the service refuses (rolled back already, nothing left to reverse, an
// entry changed since) shows the refinement's page again with the
// service's reason at the button.
func (p *Panel) harnessRollback(w http.ResponseWriter, r *http.Request) error {
	if err := p.harnessDown(); err != nil {
		return err
	}
	id := r.PathValue("id")
	out, err := p.deps.Harness.Rollback(r.Context(), id, harnesses.ByAdmin)
	if err != nil {
		shown := harnessError(err)
		var pe *Error
		if !errors.As(shown, &pe) || pe.Status == http.StatusNotFound {
			return shown
		}
		return p.refusedRollback(w, r, id, pe)
	}
	back := "/harness/refinements/" + url.PathEscape(id)
	if out.Pending != "" {
		return p.done(w, r, back, fmt.Sprintf("the rollback of %s waits for approval as proposal %s", id, out.Pending))
	}
	applied, rejected := out.Refinement.Counts()
	msg := fmt.Sprintf("rolled back %s as %s: %d edits reversed", id, out.Refinement.ID, applied)
	if rejected > 0 {
		msg += fmt.Sprintf(", %d could not be (see the rollback's edits)", rejected)
	}
	return p.done(w, r, back, msg)
}

// refusedRollback renders the refinement's page, as its own address, with
// the service's refusal next to the rollback button.
func (p *Panel) refusedRollback(w http.ResponseWriter, r *http.Request, id string, refusal *Error) error {
	page := r.Clone(r.Context())
	page.URL = &url.URL{Path: "/harness/refinements/" + id}
	v, err := p.refinementView(page, id)
	if err != nil {
		return err
	}
	v.RollbackError = refusal.Msg
	return p.render(w, page, refusal.Status, "harness", "harness", "Refinement "+id, v)
}
