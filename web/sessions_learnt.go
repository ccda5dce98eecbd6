package web

import (
	"net/http"

	"github.com/mullhq/mull/store"
)

// taskRow is a task of a session with its reflections.
type taskRow struct {
	store.Task
	Reflections []reflectionRow
}

// reflectionRow is a reflection with what became of each lesson it
// proposed.
type reflectionRow struct {
	store.Reflection
	Items []itemRow
	// Recorded are the items LessonsRecorded counts: those that wrote a
	// memory (tasks.Apply counts them in the transaction that stores
	// them, so the two agree unless a row was written another way).
	Recorded []itemRow
}

// itemRow is a reflection item and its effect on the library.
type itemRow struct {
	store.ReflectionItem
	Effect itemEffect
}

// itemEffect is what one proposed lesson did: added a memory, bumped one
// (a repeat, or a new lesson said again), superseded one (a revise), or
// nothing (none, or refused by a check: RefusedCheck says which).
type itemEffect struct {
	Added, Bumped, Superseded int64
	Refused                   bool
}

// effectOf reads an item's effect as tasks.Apply records it: a refused
// item stores nothing; a repeat bumps its target; a new one adds its
// memory, or bumps the duplicate it names as target; a revise adds its
// memory and supersedes its target.
func effectOf(it store.ReflectionItem) itemEffect {
	switch {
	case it.RefusedCheck != "":
		return itemEffect{Refused: true}
	case it.Relation == store.RelationRepeat:
		return itemEffect{Bumped: it.TargetID}
	case it.Relation == store.RelationNew && it.MemoryID == 0:
		return itemEffect{Bumped: it.TargetID}
	case it.Relation == store.RelationRevise:
		return itemEffect{Added: it.MemoryID, Superseded: it.TargetID}
	}
	return itemEffect{Added: it.MemoryID}
}

func (p *Panel) taskRow(r *http.Request, t store.Task) (taskRow, error) {
	st := p.deps.Store
	refls, err := st.ListReflections(r.Context(), st.DB, t.ID)
	if err != nil {
		return taskRow{}, err
	}
	row := taskRow{Task: t}
	for _, rf := range refls {
		rr := reflectionRow{Reflection: rf}
		for _, it := range rf.Items {
			ir := itemRow{ReflectionItem: it, Effect: effectOf(it)}
			rr.Items = append(rr.Items, ir)
			if it.MemoryID != 0 {
				rr.Recorded = append(rr.Recorded, ir)
			}
		}
		row.Reflections = append(row.Reflections, rr)
	}
	return row, nil
}

// jobIDs are the jobs that reflected on the task: the LLM calls to list.
func (t taskRow) jobIDs() []int64 {
	var ids []int64
	if t.ReflectJobID != 0 {
		ids = append(ids, t.ReflectJobID)
	}
	for _, r := range t.Reflections {
		if r.JobID != 0 && r.JobID != t.ReflectJobID {
			ids = append(ids, r.JobID)
		}
	}
	return ids
}
