package web

import (
	"cmp"
	"errors"
	"net/http"
	"slices"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// routesLessons mounts the lessons pages (seed 000): the structured
// lessons by scope and state with their precedent, what lessons_lookup
// answers the agent for one, and what the reflections proposed: the
// relation distribution and the gate's refusals.
func (p *Panel) routesLessons() {
	p.get("/lessons", p.lessonList)
	p.get("/lessons/items", p.lessonItems)
	p.get("/lessons/{id}", p.lessonPage)
	p.get("/lessons/{id}/tasks", p.lessonTasks)
}

// The filters' choices.
var (
	lessonScopes = []string{string(memory.LessonGlobal), string(memory.LessonWorkspace), string(memory.LessonSession), string(memory.LessonReflection)}
	lessonStates = []string{store.StateActive, store.StateSuperseded, store.StateDeprecated, store.StateDeleted}
	lessonKinds  = []string{string(memory.Lesson), string(memory.Directive), string(memory.Failure)}
)

// lessonRow is a lesson as the lists show it.
type lessonRow struct {
	memory.Memory
	Line      string
	Scope     memory.LessonScope
	State     memory.State
	Precedent store.Precedent
	// TaskSession is the session of the task whose reflection wrote it.
	TaskSession string
}

func newLessonRow(m memory.Memory, p store.Precedent) lessonRow {
	return lessonRow{Memory: m, Line: lesson.Line(m), Scope: lesson.ScopeOf(m), State: lesson.StateOf(m), Precedent: p,
		TaskSession: cmp.Or(m.SessionID, m.ScopeSession)}
}

// scopeCount is one scope's lessons by state.
type scopeCount struct {
	Scope       string
	Total       int64
	ByState     map[string]int64
	Quarantined int64
}

// relationRow is one relation of the reflections' distribution.
type relationRow struct {
	Relation                    string
	Proposed, Accepted, Refused int
}

// checkCount is how many items one check refused.
type checkCount struct {
	Check string
	N     int
}

type lessonsView struct {
	Scope, State, Workspace, Kind string
	// Task keeps the lessons in force at that task's start.
	Task                  string
	Quarantined           bool
	Scopes, States, Kinds []string
	Counts                []scopeCount
	Lessons               []lessonRow
	Pager                 Pager
	Stats                 memories.LessonStats
	Relations             []relationRow
	ProposedTotal         int
	Checks                []checkCount
	// Refused are the newest refused items (all on /lessons/items).
	Refused []itemListRow
}

// refusalsShown bounds the refusals /lessons lists.
const refusalsShown = 10

func (p *Panel) needLessons() error {
	if err := p.needStore(); err != nil {
		return err
	}
	if p.deps.Memories == nil {
		return Errorf(http.StatusServiceUnavailable, "this mull has no memory service configured, so there are no lessons to show")
	}
	return nil
}

func (p *Panel) lessonList(w http.ResponseWriter, r *http.Request) error {
	if err := p.needLessons(); err != nil {
		return err
	}
	q := r.URL.Query()
	v := lessonsView{Scope: q.Get("scope"), State: q.Get("state"), Workspace: q.Get("workspace"), Kind: q.Get("kind"), Task: q.Get("task"),
		Quarantined: q.Get("quarantined") == "1", Scopes: lessonScopes, States: lessonStates, Kinds: lessonKinds, Pager: pager(r, 50)}
	for name, c := range map[string]struct {
		v    string
		from []string
	}{"scope": {v.Scope, lessonScopes}, "state": {v.State, lessonStates}, "kind": {v.Kind, lessonKinds}} {
		if c.v != "" && !slices.Contains(c.from, c.v) {
			return Errorf(http.StatusBadRequest, "%s %q is not one of %v", name, c.v, c.from)
		}
	}
	ctx, st := r.Context(), p.deps.Store
	if v.Task != "" {
		// A task that does not exist had no lessons in force: say so
		// rather than list none, as a page of an unknown id does.
		if _, err := st.GetTask(ctx, st.DB, v.Task); errors.Is(err, store.ErrNotFound) {
			return Errorf(http.StatusNotFound, "mull has no task %q: a task's lessons in force link here from its session's page", v.Task)
		} else if err != nil {
			return err
		}
	}
	rows, err := st.PanelLessons(ctx, store.LessonPage{Scope: v.Scope, State: v.State, Quarantined: v.Quarantined,
		Workspace: v.Workspace, Kind: v.Kind, Task: v.Task, Limit: v.Pager.Limit(), Offset: v.Pager.Offset()})
	if err != nil {
		return err
	}
	if v.Lessons, err = p.lessonRows(r, rows[:v.Pager.Trim(len(rows))]); err != nil {
		return err
	}
	if v.Counts, err = p.scopeCounts(r); err != nil {
		return err
	}
	if v.Stats, err = p.deps.Memories.LessonStats(ctx, v.Workspace); err != nil {
		return err
	}
	for _, rel := range memories.Relations {
		v.Relations = append(v.Relations, relationRow{Relation: rel, Proposed: v.Stats.Proposed[rel], Accepted: v.Stats.Accepted[rel],
			Refused: v.Stats.Proposed[rel] - v.Stats.Accepted[rel]})
		v.ProposedTotal += v.Stats.Proposed[rel]
	}
	for check, n := range v.Stats.Refusals {
		v.Checks = append(v.Checks, checkCount{Check: check, N: n})
	}
	slices.SortFunc(v.Checks, func(a, b checkCount) int { return cmp.Or(b.N-a.N, cmp.Compare(a.Check, b.Check)) })
	items, err := st.PanelReflectionItems(ctx, store.ItemPage{Refused: true, Workspace: v.Workspace, Limit: refusalsShown})
	if err != nil {
		return err
	}
	v.Refused = itemListRows(items)
	return p.page(w, r, "lessons", "lessons", "Lessons", v)
}

// lessonRows converts a page of rows and reads their precedent.
func (p *Panel) lessonRows(r *http.Request, rows []store.Memory) ([]lessonRow, error) {
	ids := make([]int64, len(rows))
	for i, m := range rows {
		ids[i] = m.ID
	}
	prec, err := p.deps.Store.PrecedentCounts(r.Context(), p.deps.Store.DB, ids)
	if err != nil {
		return nil, err
	}
	out := make([]lessonRow, len(rows))
	for i, m := range rows {
		out[i] = newLessonRow(memories.FromRow(m), prec[m.ID])
	}
	return out, nil
}

func (p *Panel) scopeCounts(r *http.Request) ([]scopeCount, error) {
	counts, err := p.deps.Store.LessonCounts(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]scopeCount, len(lessonScopes))
	for i, sc := range lessonScopes {
		out[i] = scopeCount{Scope: sc, ByState: map[string]int64{}}
	}
	for _, c := range counts {
		i := slices.Index(lessonScopes, c.Scope)
		if i < 0 {
			continue
		}
		out[i].Total += c.N
		if c.Quarantined {
			out[i].Quarantined += c.N
		} else {
			out[i].ByState[c.State] += c.N
		}
	}
	return out, nil
}
