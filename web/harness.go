package web

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// The harness pages (seed 004's auto-refine): the entries of a store with
// their versions and diffs, the refinements with a rollback button, and
// the review job's verdicts. Reads go through the harness service (the
// lists a page at a time through the store's panel reads); the rollback
// goes through harnesses.Service.Rollback only, the path `mull harness
// rollback` and the admin API take.

// routesHarness mounts the harness pages.
func (p *Panel) routesHarness() {
	p.get("/harness", p.harnessIndex)
	p.get("/harness/refinements", p.harnessRefinements)
	p.get("/harness/reviews", p.harnessReviews)
	p.get("/harness/entries/{kind}/{id}", p.harnessEntry)
	p.get("/harness/refinements/{id}", p.harnessRefinement)
	p.post("/harness/refinements/{id}/rollback", p.harnessRollback)
}

// Page sizes: the entries and the full lists, and the newest rows the
// index shows of each.
const (
	harnessPer     = 50
	harnessListPer = 25
	harnessLatest  = 8
)

// harnessIndexView is /harness: one store's entries, and the newest
// refinements and reviews.
type harnessIndexView struct {
	Page string
	// Session is the local store shown ("" the global one).
	Session  string
	Kind     string
	Archived bool
	Kinds    []harness.Kind
	Scopes   []scopeRow
	// SessionListed: Session is one of Scopes.
	SessionListed bool
	Entries       []harnesses.EntryView
	Pager         Pager
	Latest        []refinementRow
	Reviews       []reviewRow
	// MoreRefinements and MoreReviews: the lists go on past the newest.
	MoreRefinements, MoreReviews bool
}

// refinementRow is a refinement as the lists show it.
type refinementRow struct {
	store.HarnessRefinement
	Applied, Rejected int
	// Session is the local store's session ("" global).
	Session string
}

func newRefinementRow(r store.HarnessRefinement) refinementRow {
	a, rej := r.Refinement.Counts()
	return refinementRow{HarnessRefinement: r, Applied: a, Rejected: rej, Session: sessionOf(r.ScopeKey)}
}

// scopeRow is a store that holds entries.
type scopeRow struct {
	store.HarnessScopeCount
	// Session is the local store's session ("" global).
	Session string
}

// reviewRow is a review verdict as the lists show it.
type reviewRow struct {
	store.HarnessReview
	// Store is the reviewed local store's session ("" global).
	Store string
	// Pending: RefinementID names a proposal held for approval.
	Pending bool
}

func reviewRows(rows []store.HarnessReview) []reviewRow {
	out := make([]reviewRow, len(rows))
	for i, r := range rows {
		out[i] = reviewRow{HarnessReview: r, Store: sessionOf(r.ScopeKey), Pending: strings.HasPrefix(r.RefinementID, "harness-")}
	}
	return out
}

// sessionOf is a scope key's session ("" for the global store).
func sessionOf(key string) string {
	s, _ := strings.CutPrefix(key, "session:")
	if s == key {
		return ""
	}
	return s
}

// harnessDown is the page of a mull without the harness service.
func (p *Panel) harnessDown() error {
	if p.deps.Harness == nil || p.deps.Store == nil {
		return Errorf(http.StatusServiceUnavailable, "the harness service is not configured in this mull, so there is nothing to show here")
	}
	return nil
}

func (p *Panel) harnessIndex(w http.ResponseWriter, r *http.Request) error {
	if err := p.harnessDown(); err != nil {
		return err
	}
	ctx, q := r.Context(), r.URL.Query()
	v := harnessIndexView{Page: "index", Session: strings.TrimSpace(q.Get("session")), Kind: q.Get("kind"),
		Archived: q.Get("archived") != "", Kinds: harness.Kinds, Pager: pager(r, harnessPer)}
	if v.Kind != "" && !slices.Contains(harness.Kinds, harness.Kind(v.Kind)) {
		return Errorf(http.StatusBadRequest, "kind %q is not one of prompt, memory, skill, subagent", v.Kind)
	}
	entries, err := p.deps.Harness.List(ctx, harnesses.ListFilter{Session: v.Session, Kind: harness.Kind(v.Kind), Archived: v.Archived})
	if err != nil {
		return harnessError(err)
	}
	v.Entries = pageOf(entries, &v.Pager)
	scopes, err := p.deps.Store.PanelHarnessScopes(ctx, 50)
	if err != nil {
		return err
	}
	for _, sc := range scopes {
		row := scopeRow{HarnessScopeCount: sc, Session: sessionOf(sc.ScopeKey)}
		v.SessionListed = v.SessionListed || row.Session != "" && row.Session == v.Session
		v.Scopes = append(v.Scopes, row)
	}
	refs, err := p.deps.Store.PanelHarnessRefinements(ctx, store.PanelRefinementFilter{Limit: harnessLatest + 1})
	if err != nil {
		return err
	}
	v.MoreRefinements = len(refs) > harnessLatest
	for _, ref := range refs[:min(len(refs), harnessLatest)] {
		v.Latest = append(v.Latest, newRefinementRow(ref))
	}
	reviews, err := p.deps.Store.PanelHarnessReviews(ctx, store.PanelReviewFilter{Limit: harnessLatest + 1})
	if err != nil {
		return err
	}
	v.MoreReviews = len(reviews) > harnessLatest
	v.Reviews = reviewRows(reviews[:min(len(reviews), harnessLatest)])
	return p.page(w, r, "harness", "harness", "Harness", v)
}

// pageOf is the rows of all on g's page, g's HasNext set.
func pageOf[T any](all []T, g *Pager) []T {
	from := min(g.Offset(), len(all))
	rest := all[from:]
	return rest[:g.Trim(len(rest))]
}

// harnessListView is /harness/refinements and /harness/reviews.
type harnessListView struct {
	Page string
	// Scope and Source filter refinements; Session, Outcome reviews.
	Scope, Source    string
	Session, Outcome string
	Refinements      []refinementRow
	Reviews          []reviewRow
	Pager            Pager
	Sources          []harnesses.Source
	Outcomes         []harness.Outcome
}

func (p *Panel) harnessRefinements(w http.ResponseWriter, r *http.Request) error {
	if err := p.harnessDown(); err != nil {
		return err
	}
	q := r.URL.Query()
	v := harnessListView{Page: "refinements", Scope: strings.TrimSpace(q.Get("scope")), Source: q.Get("source"),
		Pager: pager(r, harnessListPer), Sources: []harnesses.Source{harnesses.ByJob, harnesses.ByAgent, harnesses.ByAdmin}}
	if v.Source != "" && !slices.Contains(v.Sources, harnesses.Source(v.Source)) {
		return Errorf(http.StatusBadRequest, "source %q is not one of job, agent, admin", v.Source)
	}
	if v.Scope != "" && v.Scope != "global" && !strings.HasPrefix(v.Scope, "session:") {
		v.Scope = "session:" + v.Scope // a bare session id names its local store
	}
	rows, err := p.deps.Store.PanelHarnessRefinements(r.Context(), store.PanelRefinementFilter{ScopeKey: v.Scope, Source: v.Source,
		Limit: v.Pager.Limit(), Offset: v.Pager.Offset()})
	if err != nil {
		return err
	}
	for _, ref := range rows[:v.Pager.Trim(len(rows))] {
		v.Refinements = append(v.Refinements, newRefinementRow(ref))
	}
	return p.page(w, r, "harness", "harness", "Harness refinements", v)
}

func (p *Panel) harnessReviews(w http.ResponseWriter, r *http.Request) error {
	if err := p.harnessDown(); err != nil {
		return err
	}
	q := r.URL.Query()
	v := harnessListView{Page: "reviews", Session: strings.TrimSpace(q.Get("session")), Outcome: q.Get("outcome"),
		Pager: pager(r, harnessListPer), Outcomes: []harness.Outcome{harness.Approved, harness.Assessed, harness.Declined, harness.Failed}}
	if v.Outcome != "" && !slices.Contains(v.Outcomes, harness.Outcome(v.Outcome)) {
		return Errorf(http.StatusBadRequest, "outcome %q is not one of approved, assessed, declined, failed", v.Outcome)
	}
	rows, err := p.deps.Store.PanelHarnessReviews(r.Context(), store.PanelReviewFilter{Session: v.Session, Outcome: v.Outcome,
		Limit: v.Pager.Limit(), Offset: v.Pager.Offset()})
	if err != nil {
		return err
	}
	v.Reviews = reviewRows(rows[:v.Pager.Trim(len(rows))])
	return p.page(w, r, "harness", "harness", "Harness reviews", v)
}

// harnessError maps the service's errors to what a page shows: a bad
// field 400, an unknown entry or refinement 404, a conflict 409 with the
// service's message; anything else is a 500.
func harnessError(err error) error {
	var fe *harnesses.FieldError
	switch {
	case errors.As(err, &fe):
		return Errorf(http.StatusBadRequest, "%s", fe.Error())
	case errors.Is(err, harnesses.ErrNotFound):
		return Errorf(http.StatusNotFound, "%s", strings.TrimSuffix(err.Error(), ": "+store.ErrNotFound.Error()))
	case errors.Is(err, harnesses.ErrConflict):
		return Errorf(http.StatusConflict, "%s", err.Error())
	}
	return err
}
