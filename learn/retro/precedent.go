package retro

import (
	"slices"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
)

// DropPrecedent: a supersede of a structured lesson that the precedent
// gate refused (lesson.CheckEvidence): no evidence task ids, or one that
// is unknown, open, succeeded, or did not have the lesson in force. The
// DroppedRef's Detail says which check failed.
const DropPrecedent = "precedent_gate"

// Structured reports a memory the precedent gate guards: a lesson,
// directive or failure with the lesson model's fields. Free-text memories
// (facts, methods, a free-text lesson from before the model) keep the
// retro's own supersede rules.
func Structured(m memory.Memory) bool { return m.Kind.Structured() && m.Lesson != nil }

// EvidenceIDs lists every evidence task id the invalidations of c cite,
// deduplicated, sorted: what the job loads before GatePrecedent.
func EvidenceIDs(c Changes) []string {
	var ids []string
	for _, inv := range c.Invalidate {
		ids = append(ids, inv.Evidence...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// GatePrecedent applies the precedent gate (seed 2.3, issue 11 §3) to a
// planned retro: an invalidation of a structured lesson of existing stays
// only when its evidence passes lesson.CheckEvidence; otherwise it is
// removed and counted in Dropped with reason DropPrecedent, and the rest of
// the retro applies (the entry that named it is still added, unlinked).
// Invalidations of other memories are left alone. tasks finds an evidence
// task by id. The result is a new Changes; c is not modified.
func GatePrecedent(c Changes, existing []memory.Memory, tasks func(id string) (lesson.TaskOutcome, bool)) Changes {
	byID := make(map[int64]memory.Memory, len(existing))
	for _, m := range existing {
		byID[m.ID] = m
	}
	kept := make([]Invalidation, 0, len(c.Invalidate))
	dropped := slices.Clone(c.Dropped)
	for _, inv := range c.Invalidate {
		m, ok := byID[inv.ID]
		if !ok || !Structured(m) {
			kept = append(kept, inv)
			continue
		}
		get := func(id int64) (memory.Memory, bool) { m, ok := byID[id]; return m, ok }
		err := lesson.CheckEvidenceLineage(lesson.Lineage(m, get), inv.Evidence, tasks)
		if err == nil {
			kept = append(kept, inv)
			continue
		}
		dropped = append(dropped, DroppedRef{Field: inv.Field, Ref: Ref{ID: inv.ID}, Reason: DropPrecedent, Detail: err.Error()})
		if inv.ByID {
			c.SupersedesByID--
		}
	}
	c.Invalidate, c.Dropped = kept, dropped
	return c
}
