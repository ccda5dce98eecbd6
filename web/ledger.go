package web

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
)

// routesLedger mounts the ledger pages: the negative ledger's facts (seed
// 003) with their evidence, and its three honest counters.
func (p *Panel) routesLedger() {
	p.get("/ledger", p.ledger)
	p.get("/ledger/{id}", p.ledgerFact)
	p.post("/ledger/{id}/resolve", p.ledgerResolve)
}

// ledgerPer is a page of facts; ledgerEventsPer a page of a fact's events.
const (
	ledgerPer       = 25
	ledgerEventsPer = 50
)

// ledgerStates are the state filter's values: what each keeps.
var ledgerStates = []struct {
	Key, Label string
	statuses   []ledger.Status
	current    bool
}{
	{"", "open (active or stale)", []ledger.Status{ledger.Active, ledger.Stale}, true},
	{"active", "active", []ledger.Status{ledger.Active}, false},
	{"stale", "stale", []ledger.Status{ledger.Stale}, false},
	{"resolved", "resolved", []ledger.Status{ledger.Resolved}, false},
	{"superseded", "superseded", []ledger.Status{ledger.Superseded}, false},
	{"current", "current (any status)", nil, true},
	{"all", "every version", nil, false},
}

// ledgerHits are the counter filter's values (store.LedgerPage.Hit).
var ledgerHits = []struct{ Key, Label string }{
	{"", "any"},
	{"any", "hit by a later attempt"},
	{store.LedgerOpDeny, "calls denied"},
	{store.LedgerOpWarn, "warnings emitted"},
	{store.LedgerOpDuplicate, "duplicate failures"},
}

type ledgerView struct {
	// Workspace, State and Hit are the filters (ledgerStates, ledgerHits).
	Workspace, State, Hit string
	// Workspaces are those with facts, for the filter.
	Workspaces []string
	States     any
	Hits       any
	// Mode is the workspace's ledger mode (the default one for every
	// workspace).
	Mode ledger.Mode
	// Summary holds the three counters over the workspace's facts.
	Summary ledger.Summary
	Facts   []factRow
	Pager   Pager
}

// factRow is a fact with its evidence described.
type factRow struct {
	ledger.Fact
	Witnesses []witnessRow
}

func newFactRow(f ledger.Fact) factRow {
	row := factRow{Fact: f}
	for _, w := range f.Evidence {
		row.Witnesses = append(row.Witnesses, witnessRow{Witness: w})
	}
	return row
}

func (p *Panel) ledger(w http.ResponseWriter, r *http.Request) error {
	if p.deps.Negledger == nil {
		return Errorf(http.StatusServiceUnavailable, "the negative ledger is not configured on this server")
	}
	q := r.URL.Query()
	v := ledgerView{Workspace: strings.TrimSpace(q.Get("workspace")), State: q.Get("state"), Hit: q.Get("hit"),
		States: ledgerStates, Hits: ledgerHits, Pager: pager(r, ledgerPer)}
	filter := store.LedgerPage{Scope: v.Workspace, Hit: v.Hit, Limit: v.Pager.Limit(), Offset: v.Pager.Offset()}
	found := false
	for _, s := range ledgerStates {
		if s.Key == v.State {
			filter.Statuses, filter.CurrentOnly, found = s.statuses, s.current, true
		}
	}
	if !found {
		return Errorf(http.StatusBadRequest, "state %q: want active, stale, resolved, superseded, current or all", v.State)
	}
	if v.Hit != "" && !validHit(v.Hit) {
		return Errorf(http.StatusBadRequest, "hit %q: want any, deny, warn or duplicate", v.Hit)
	}
	ctx := r.Context()
	var err error
	if v.Summary, err = p.deps.Negledger.Stats(ctx, v.Workspace); err != nil {
		return err
	}
	if v.Workspaces, err = p.deps.Store.LedgerScopes(ctx, 500); err != nil {
		return err
	}
	if v.Workspace != "" && !slices.Contains(v.Workspaces, v.Workspace) {
		v.Workspaces = append(v.Workspaces, v.Workspace)
	}
	v.Mode = p.deps.Negledger.PolicyFor(v.Workspace).Mode
	facts, err := p.deps.Store.LedgerFactsPage(ctx, filter)
	if err != nil {
		return err
	}
	for _, f := range facts[:v.Pager.Trim(len(facts))] {
		v.Facts = append(v.Facts, newFactRow(f))
	}
	return p.page(w, r, "ledger", "ledger", "Negative ledger", v)
}

func validHit(h string) bool {
	return slices.ContainsFunc(ledgerHits, func(x struct{ Key, Label string }) bool { return x.Key == h })
}

type ledgerFactView struct {
	// Fact's Witnesses each have the world's current value when it is a
	// file-state precondition mull has observed.
	Fact   factRow
	Events []eventRow
	Pager  Pager
	// Resolvable: a person may retract it (current, not resolved).
	Resolvable bool
	MaxReason  int
	// HasPreconditions: a changed precondition allows a retry whatever
	// the retry condition says.
	HasPreconditions bool
}

// witnessRow is one piece of evidence and, for a file-state
// precondition, its latest observation.
type witnessRow struct {
	ledger.Witness
	Now *store.LedgerObservation
	// Differs: the observation contradicts the witness (the fact is
	// stale while it does).
	Differs bool
}

func (p *Panel) ledgerFact(w http.ResponseWriter, r *http.Request) error {
	if p.deps.Negledger == nil {
		return Errorf(http.StatusServiceUnavailable, "the negative ledger is not configured on this server")
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return Errorf(http.StatusBadRequest, "fact id %q: want a whole number from 1", r.PathValue("id"))
	}
	ctx := r.Context()
	f, err := p.deps.Negledger.Get(ctx, id)
	if errors.Is(err, negledger.ErrNotFound) {
		return Errorf(http.StatusNotFound, "no ledger fact %d (resolved and superseded facts are pruned 30 days after their last change)", id)
	}
	if err != nil {
		return err
	}
	v := ledgerFactView{Fact: newFactRow(f), Pager: pager(r, ledgerEventsPer), MaxReason: negledger.ResolveReasonMax,
		Resolvable: f.Current && f.Status != ledger.Resolved}
	for _, w := range f.Evidence {
		v.HasPreconditions = v.HasPreconditions || w.Role == ledger.Precondition
	}
	if err := p.observe(r, &v.Fact); err != nil {
		return err
	}
	events, err := p.deps.Store.LedgerFactEvents(ctx, id, v.Pager.Limit(), v.Pager.Offset())
	if err != nil {
		return err
	}
	for _, e := range events[:v.Pager.Trim(len(events))] {
		v.Events = append(v.Events, eventRow{e})
	}
	return p.page(w, r, "ledger_fact", "ledger", "Ledger fact "+strconv.FormatInt(id, 10), v)
}

// observe pairs a fact's file-state preconditions with the latest
// observations of their files.
func (p *Panel) observe(r *http.Request, f *factRow) error {
	var keys []string
	for _, w := range f.Evidence {
		if w.Role == ledger.Precondition && w.Kind == ledger.WitnessFileState && w.Path != "" {
			keys = append(keys, w.Path)
		}
	}
	obs, err := p.deps.Store.LedgerObservations(r.Context(), f.Scope, keys)
	if err != nil {
		return err
	}
	for i := range f.Witnesses {
		w := &f.Witnesses[i]
		if o, ok := obs[w.Path]; ok && w.Kind == ledger.WitnessFileState && w.Role == ledger.Precondition {
			w.Now = &o
			w.Differs = o.Observed != w.Observed || (o.Observed == ledger.Present && o.Version != w.Version)
		}
	}
	return nil
}

// eventRow is one of a fact's events, linked to its session.
type eventRow struct{ store.LedgerEvent }

// SessionPath is the session the event came from ("" for none).
func (e eventRow) SessionPath() string { return sessionPath(e.Session) }

// Text describes the witness in a line: what it proves or depends on.
func (w witnessRow) Text() string {
	switch w.Kind {
	case ledger.WitnessCommandExit:
		s := "exit code ?"
		if w.ExitCode != nil {
			s = "exit code " + strconv.Itoa(*w.ExitCode)
		}
		if w.StderrSignature != "" {
			s += ": " + trunc(120, w.StderrSignature)
		}
		return s
	case ledger.WitnessErrorCode:
		return "error " + w.Code
	case ledger.WitnessFileState:
		if w.Observed == ledger.Present {
			return ledger.DisplayKey(w.Path) + " present at version " + trunc(16, w.Version)
		}
		return ledger.DisplayKey(w.Path) + " absent"
	case ledger.WitnessEnvState:
		return "env " + w.Key + " hashed " + trunc(12, w.Hash)
	case ledger.WitnessRepoState:
		return "repo " + w.Root + " at " + trunc(12, w.Hash)
	}
	return w.Kind + " of " + ledger.DisplayKey(w.Path) + " hashed " + trunc(12, w.Hash)
}

// StatusClass is the badge class of the fact's status.
func (f factRow) StatusClass() string {
	switch f.Status {
	case ledger.Active:
		return "bad"
	case ledger.Stale:
		return "warn"
	case ledger.Resolved:
		return "ok"
	}
	return ""
}

// ledgerResolve retracts a fact by a person's hand, with the reason,
// through the ledger service (as `mull ledger resolve` does).
func (p *Panel) ledgerResolve(w http.ResponseWriter, r *http.Request) error {
	if p.deps.Negledger == nil {
		return Errorf(http.StatusServiceUnavailable, "the negative ledger is not configured on this server")
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return Errorf(http.StatusBadRequest, "fact id %q: want a whole number from 1", r.PathValue("id"))
	}
	f, err := p.deps.Negledger.Resolve(r.Context(), id, r.PostForm.Get("reason"))
	var fe *negledger.FieldError
	switch {
	case errors.As(err, &fe):
		return Errorf(http.StatusBadRequest, "resolve fact %d: the %s is %s", id, fe.Field, fe.Problem)
	case errors.Is(err, negledger.ErrNotFound):
		return Errorf(http.StatusNotFound, "no ledger fact %d", id)
	case errors.Is(err, negledger.ErrConflict):
		return Errorf(http.StatusConflict, "%s", err.Error())
	case err != nil:
		return err
	}
	return p.done(w, r, "/ledger/"+strconv.FormatInt(id, 10), "Fact "+strconv.FormatInt(f.ID, 10)+" resolved: it no longer intercepts.")
}
