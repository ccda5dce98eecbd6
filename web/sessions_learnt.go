package web

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/mullhq/mull/jobs/retrosession"
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

// retroRow is a retro applied to a session: what its counts say, and the
// memories it added and those they superseded.
type retroRow struct {
	store.RetroRun
	// Kind is its job's kind (retro_session or retro_error) as its LLM
	// call recorded it; "" when no call is kept.
	Kind      string
	Counts    retrosession.Counts
	CountsErr string
	// Also says what else it did (handoff, playbooks, proposal…), and
	// Flags what asks for a look (quarantined, truncated).
	Also, Flags []string
	Added       []store.Memory
	Superseded  []store.Memory
	// Bumped are the memories Counts.BumpedIDs names, in its order (a
	// memory no longer stored has only its ID).
	Bumped []store.Memory
}

// retroMemoriesShown bounds the memories listed per retro.
const retroMemoriesShown = 50

func (p *Panel) retroRows(r *http.Request, sessionID string) ([]retroRow, error) {
	st := p.deps.Store
	runs, err := st.SessionRetroRuns(r.Context(), sessionID, 100)
	if err != nil {
		return nil, err
	}
	out := make([]retroRow, len(runs))
	for i, run := range runs {
		row := retroRow{RetroRun: run}
		if err := json.Unmarshal([]byte(run.Counts), &row.Counts); err != nil {
			row.CountsErr = "its counts are not readable: " + err.Error()
		}
		row.Also, row.Flags = retroNotes(row.Counts)
		mems, err := st.MemoriesOfJobs(r.Context(), []int64{run.JobID}, retroMemoriesShown)
		if err != nil {
			return nil, err
		}
		if row.Bumped, err = bumpedMemories(r, st, row.Counts.BumpedIDs); err != nil {
			return nil, err
		}
		for _, m := range mems {
			if m.JobID == run.JobID {
				row.Added = append(row.Added, m)
			} else {
				row.Superseded = append(row.Superseded, m)
			}
		}
		out[i] = row
	}
	return out, nil
}

// retroNotes says what a retro did besides its memories, and what of it
// asks for a look.
func retroNotes(c retrosession.Counts) (also, flags []string) {
	add := func(to *[]string, ok bool, format string, args ...any) {
		if ok {
			*to = append(*to, fmt.Sprintf(format, args...))
		}
	}
	add(&also, c.Handoff, "left a handoff")
	add(&also, c.HandoffStale, "handoff not stored (a newer session's stands)")
	add(&also, c.Playbooks > 0, "%d playbooks", c.Playbooks)
	add(&also, c.Proposal, "a proposal")
	add(&also, c.ProposalRefused, "proposal dropped (the user rejected it before)")
	add(&also, c.Promoted > 0, "%d promoted to the global library", c.Promoted)
	add(&also, c.Redacted > 0, "%d credentials redacted", c.Redacted)
	add(&flags, c.Quarantined > 0, "%d quarantined by the trust gate", c.Quarantined)
	add(&flags, c.Truncated, "the answer was truncated: only its additive sections applied")
	for _, why := range slices.Sorted(maps.Keys(c.DroppedIDs)) {
		add(&flags, true, "%d ids dropped (%s)", c.DroppedIDs[why], why)
	}
	return also, flags
}

// bumpedMemories reads the memories a retro bumped, in the order it
// recorded them; an id no longer stored is listed by its id alone.
func bumpedMemories(r *http.Request, st *store.Store, ids []int64) ([]store.Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	mems, err := st.MemoriesByID(r.Context(), st.DB, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]store.Memory, len(mems))
	for _, m := range mems {
		byID[m.ID] = m
	}
	out := make([]store.Memory, len(ids))
	for i, id := range ids {
		m, ok := byID[id]
		if !ok {
			m = store.Memory{ID: id}
		}
		out[i] = m
	}
	return out, nil
}
