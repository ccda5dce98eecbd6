package web

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// memoryView is one memory's page: the memory, its two timelines, every
// recorded change in time order, its uses, and what names it.
type memoryView struct {
	M memory.Memory
	// State is its panel state (store.PanelStates).
	State string
	// Library is where it lives, as a person reads it.
	Library string
	// StaleAt is when its TTL runs out (zero: never).
	StaleAt time.Time
	// Changes are the recorded changes, oldest first.
	Changes []change
	// Superseded are the memories it replaced; Promoted those moved or
	// promoted from it; By its replacement (nil none); From the one it was
	// moved from (nil none).
	Superseded, Promoted []store.Memory
	By, From             *store.Memory
	Links                []store.Link
	Reflections          []store.MemoryReflection
	Precedent            store.Precedent
	// Structured: a lesson, directive or failure (its fields show).
	Structured bool
	// Verifier names who made its last verification (memories.Verifier;
	// "" never verified).
	Verifier string
	// AtRecorded and AtInvalid are its times as /asof's at (to the
	// nanosecond: a link to the second would miss it).
	AtRecorded, AtInvalid string
	// UseTotals is its uses and how many the use log lists; Uses the
	// newest of them (all on /memories/{id}/uses).
	UseTotals useTotals
	Uses      []useRow
}

// change is one event of a memory's history, as recorded.
type change struct {
	At   time.Time
	What string
	// Detail is free text (a reason, a relation).
	Detail string
	// Memory links another memory (0 none); Job a River job (0 none);
	// Session and Task name theirs ("" none).
	Memory  int64
	Job     int64
	Session string
	Task    string
}

func (p *Panel) memoryPage(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return Errorf(http.StatusNotFound, "no memory %q: a memory's id is a positive number", r.PathValue("id"))
	}
	v, err := p.memoryData(r, id)
	if errors.Is(err, store.ErrNotFound) {
		return Errorf(http.StatusNotFound, "no memory %d: it was never recorded (nothing is deleted, so the id is wrong)", id)
	}
	if err != nil {
		return err
	}
	return p.page(w, r, "memory", "memories", "Memory "+strconv.FormatInt(id, 10), v)
}

func (p *Panel) memoryData(r *http.Request, id int64) (memoryView, error) {
	ctx, s := r.Context(), p.deps.Store
	row, err := s.GetMemory(ctx, s.DB, id)
	if err != nil {
		return memoryView{}, err
	}
	m := memories.FromRow(row)
	v := memoryView{M: m, State: store.PanelState(row), Library: libraryValue(m.Workspace), Structured: m.Kind.Structured(),
		Verifier: memories.Verifier(m)}
	if m.TTLDays > 0 {
		v.StaleAt = cmp.Or(m.VerifiedAt, m.RecordedAt).AddDate(0, 0, m.TTLDays)
	}
	if v.Superseded, v.Promoted, err = s.MemoryRelated(ctx, s.DB, id); err != nil {
		return v, err
	}
	if v.By, err = p.optMemory(r, m.SupersededBy); err != nil {
		return v, err
	}
	if v.From, err = p.optMemory(r, m.PromotedFromID); err != nil {
		return v, err
	}
	if v.Links, err = s.ListLinks(ctx, s.DB, []int64{id}); err != nil {
		return v, err
	}
	if v.Reflections, err = s.MemoryReflections(ctx, s.DB, id); err != nil {
		return v, err
	}
	counts, err := s.PrecedentCounts(ctx, s.DB, []int64{id})
	if err != nil {
		return v, err
	}
	v.Precedent = counts[id]
	if err := p.memoryUseSummary(r, &v); err != nil {
		return v, err
	}
	v.AtRecorded = m.RecordedAt.Format(time.RFC3339Nano)
	if !m.InvalidAt.IsZero() {
		v.AtInvalid = m.InvalidAt.Format(time.RFC3339Nano)
	}
	v.Changes = changes(v)
	return v, nil
}

func (p *Panel) optMemory(r *http.Request, id int64) (*store.Memory, error) {
	if id == 0 {
		return nil, nil
	}
	m, err := p.deps.Store.GetMemory(r.Context(), p.deps.Store.DB, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return &m, err
}

// changes lists what the store recorded about v.M, oldest first. Only
// what is stored shows: verified_at keeps the last verification only,
// and uses are listed apart (its Uses).
func changes(v memoryView) []change {
	m := v.M
	out := []change{{At: m.RecordedAt, What: "recorded by " + string(m.Origin), Detail: srcDetail(m.Src),
		Job: m.JobID, Session: m.SessionID, Task: m.TaskID, Memory: m.PromotedFromID}}
	if m.Quarantined {
		out = append(out, change{At: m.RecordedAt, What: "quarantined by the trust gate", Detail: m.QuarantineReason})
	}
	switch {
	case m.VerifiedBy == memory.VerifiedByMerge:
		out = append(out, change{At: m.VerifiedAt, What: "freshness carried by consolidation",
			Detail: "its newest merged source's record time; no one verified it"})
	case !m.VerifiedAt.IsZero():
		out = append(out, change{At: m.VerifiedAt, What: "verified (last time) by " + memories.Verifier(m),
			Detail: "src is now " + string(m.Src)})
	}
	for _, o := range v.Superseded {
		out = append(out, change{At: o.InvalidAt, What: "superseded memory", Memory: o.ID, Detail: o.InvalidReason})
	}
	for _, o := range v.Promoted {
		out = append(out, change{At: o.RecordedAt, What: "moved or promoted to " + libraryValue(o.Workspace), Memory: o.ID,
			Job: o.JobID})
	}
	for _, l := range v.Links {
		other := l.ToID
		if other == m.ID {
			other = l.FromID
		}
		out = append(out, change{At: l.RecordedAt, What: "conflict declared (" + l.Kind + ")", Detail: l.Note,
			Memory: other, Job: l.JobID, Task: l.TaskID})
	}
	for _, rf := range v.Reflections {
		what := "reflection (" + rf.By + "): " + rf.Relation
		if rf.MemoryID == m.ID {
			what = "written by a reflection (" + rf.By + "): " + rf.Relation
		}
		detail := rf.Verdict
		if rf.RefusedCheck != "" {
			detail = "refused by " + rf.RefusedCheck
		}
		out = append(out, change{At: rf.RecordedAt, What: what, Detail: detail, Job: rf.JobID, Task: rf.TaskID})
	}
	if !m.InvalidAt.IsZero() {
		out = append(out, change{At: m.InvalidAt, What: "left force: " + string(cmp.Or(m.State, memory.StateDeleted)),
			Detail: m.InvalidReason, Memory: m.SupersededBy})
	}
	slices.SortStableFunc(out, func(a, b change) int { return a.At.Compare(b.At) })
	return out
}

func srcDetail(s memory.Src) string {
	if s == "" {
		return "no source claimed"
	}
	return "source claimed: " + string(s)
}
