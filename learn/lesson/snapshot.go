// Package lesson holds the pure rules of the dsh-lessons seed (000): what a
// structured lesson must say, who sees it, the decision environment a task
// freezes at its start, the precedent counts and gate, and how lessons are
// rendered. No SQL, no River, no HTTP here.
package lesson

import (
	"cmp"
	"slices"
	"time"

	"github.com/mullhq/mull/learn/memory"
)

// MaxDetailed is how many lessons a snapshot keeps in full (the seed's 12);
// the rest are listed by id and problem only.
const MaxDetailed = 12

// Snapshot is the decision environment a task froze when it opened: the
// lessons in force for its session exactly as the agent's digest showed
// them. It is written once and never changed.
type Snapshot struct {
	// TakenAt is when the task opened.
	TakenAt time.Time `json:"taken_at"`
	// CommittedAt is when the digest the agent was served was published
	// (its watermark): lessons newer than that were not in the prompt.
	CommittedAt time.Time `json:"committed_at"`
	// Count is every lesson in force: len(Lessons) + len(Omitted).
	Count int `json:"count"`
	// Truncated: more than MaxDetailed were in force.
	Truncated bool `json:"truncated"`
	// Lessons are the first MaxDetailed, high → medium → low confidence,
	// newest first within a level.
	Lessons []Entry `json:"lessons"`
	// Omitted are the rest, by id and problem.
	Omitted []Omitted `json:"omitted"`
}

// Entry is one lesson as a snapshot keeps it in full.
type Entry struct {
	ID          int64  `json:"id"`
	Kind        string `json:"kind"`
	Scope       string `json:"scope"`
	Confidence  string `json:"confidence"`
	Problem     string `json:"problem"`
	Attempted   string `json:"attempted,omitempty"`
	Correction  string `json:"correction,omitempty"`
	AppliesWhen string `json:"applies_when,omitempty"`
	Avoid       string `json:"avoid,omitempty"`
	Instead     string `json:"instead,omitempty"`
}

// Omitted is a lesson in force that the snapshot lists without detail.
type Omitted struct {
	ID         int64  `json:"id"`
	Confidence string `json:"confidence,omitempty"`
	Problem    string `json:"problem"`
}

// IDs lists every lesson id in s, detailed first: what task_close records
// as environment_ids and what the precedent counts join on.
func (s Snapshot) IDs() []int64 {
	ids := make([]int64, 0, len(s.Lessons)+len(s.Omitted))
	for _, e := range s.Lessons {
		ids = append(ids, e.ID)
	}
	for _, o := range s.Omitted {
		ids = append(ids, o.ID)
	}
	return ids
}

// BuildSnapshot freezes the decision environment of a task opening at
// takenAt, from the lessons in force for its session as of the digest
// published at committedAt. inForce is already filtered (who sees what is
// scope.go's rule, what the digest showed is the store's); memories of
// other than the structured kinds are left out, and an id listed twice
// counts once.
//
// The first MaxDetailed lessons, by confidence (high → medium → low) and
// newest first within a level, are kept in full; the rest are kept by id,
// confidence and problem, so Count is every lesson in force and every id
// is in the snapshot. Taking "the first 12 as written" instead would drop
// the newest and most confident lessons, the seed's own finding.
//
// A lesson without structured fields (free text written before the lesson
// model, Lesson == nil) keeps its Text as its problem and ranks as medium:
// nobody rated it, so it sits neither above a lesson its writer rated high
// nor below one rated low. A structured lesson without a confidence, or
// with one outside the three, ranks as medium too, and the snapshot says
// medium, so what the agent reads matches the order it was ranked in.
func BuildSnapshot(inForce []memory.Memory, takenAt, committedAt time.Time) Snapshot {
	ms := make([]memory.Memory, 0, len(inForce))
	seen := make(map[int64]bool, len(inForce))
	for _, m := range inForce {
		if m.Kind.Structured() && !seen[m.ID] {
			seen[m.ID] = true
			ms = append(ms, m)
		}
	}
	slices.SortStableFunc(ms, func(a, b memory.Memory) int {
		return cmp.Or(
			cmp.Compare(snapshotRank(snapshotConfidence(a)), snapshotRank(snapshotConfidence(b))),
			b.RecordedAt.Compare(a.RecordedAt),
			cmp.Compare(b.ID, a.ID),
		)
	})
	s := Snapshot{
		TakenAt:     takenAt.UTC(),
		CommittedAt: committedAt.UTC(),
		Count:       len(ms),
		Truncated:   len(ms) > MaxDetailed,
		Lessons:     []Entry{},
		Omitted:     []Omitted{},
	}
	for i, m := range ms {
		if i < MaxDetailed {
			s.Lessons = append(s.Lessons, snapshotEntry(m))
			continue
		}
		s.Omitted = append(s.Omitted, Omitted{ID: m.ID, Confidence: string(snapshotConfidence(m)), Problem: snapshotEntry(m).Problem})
	}
	return s
}

// snapshotEntry is m as a snapshot keeps it in full.
func snapshotEntry(m memory.Memory) Entry {
	e := Entry{
		ID:         m.ID,
		Kind:       string(m.Kind),
		Scope:      string(snapshotScope(m)),
		Confidence: string(snapshotConfidence(m)),
		Problem:    m.Text,
	}
	if f := m.Lesson; f != nil {
		e.Problem = cmp.Or(f.Problem, m.Text)
		e.Attempted, e.Correction, e.AppliesWhen = f.Attempted, f.Correction, f.AppliesWhen
		e.Avoid, e.Instead = f.Avoid, f.Instead
	}
	return e
}

// snapshotScope is m's lesson scope; a lesson written before scopes (Scope
// "") is global when it has no workspace and workspace-scoped otherwise,
// which is who the digest showed it to.
func snapshotScope(m memory.Memory) memory.LessonScope { return ScopeOf(m) }

// snapshotConfidence is m's confidence for ranking: medium when unrated
// (see BuildSnapshot).
func snapshotConfidence(m memory.Memory) memory.Confidence {
	if m.Lesson != nil {
		switch c := m.Lesson.Confidence; c {
		case memory.ConfidenceHigh, memory.ConfidenceMedium, memory.ConfidenceLow:
			return c
		}
	}
	return memory.ConfidenceMedium
}

// snapshotRank orders confidences high first.
func snapshotRank(c memory.Confidence) int {
	switch c {
	case memory.ConfidenceHigh:
		return 0
	case memory.ConfidenceLow:
		return 2
	}
	return 1
}
