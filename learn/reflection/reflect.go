// Package reflection holds the pure rules of a task reflection (the
// dsh-lessons seed, 000): the JSON a reflection is written in (the
// reflect_task job's model output and the agent's task_reflect call send
// the same), how it is validated, the adversarial review a lesson may have
// to carry, the material a reflection reads (the decision trajectory of the
// task window and the instructions around it), the per-turn fallback's
// material and the missed-task nudge. No SQL, no River, no HTTP here: the
// job and the API load the events, call these and store the result.
package reflection

import (
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
)

// Relation is what a reflected lesson declares about the lessons already
// stored. mull only carries the declaration out; it never guesses it.
type Relation string

// The relations of the seed.
const (
	// New is a lesson not stored before; it needs the lesson's fields.
	New Relation = "new"
	// Repeat says again what a stored lesson (TargetID) says: it adds
	// evidence only, and its fields are ignored.
	Repeat Relation = "repeat"
	// Revise corrects a stored lesson (TargetID), which stops injecting. It
	// needs the new fields and EvidenceTaskIDs, the failed tasks the
	// precedent gate (learn/lesson CheckEvidence) checks.
	Revise Relation = "revise"
	// None: nothing new was learnt; nothing is stored.
	None Relation = "none"
)

// Relations lists the relations in the seed's order.
var Relations = []Relation{New, Repeat, Revise, None}

// Limits on one reflection. A task gives few lessons: more than MaxLessons
// in one reflection is a model listing everything it did, so it is refused
// rather than cut (a cut would drop lessons silently).
const (
	// MaxBytes bounds the JSON of one reflection.
	MaxBytes = 64 << 10
	// MaxLessons is how many lessons one reflection may carry.
	MaxLessons = 6
	// MaxAssessmentRunes bounds the assessment.
	MaxAssessmentRunes = 2000
	// MaxSourceRunes bounds the agent's claim of where the lessons came
	// from.
	MaxSourceRunes = 400
	// MaxFieldRunes bounds each lesson field (problem, correction, …): the
	// lesson model's own cap, so what Parse accepts is what can be stored.
	MaxFieldRunes = lesson.MaxFieldRunes
	// MaxEvidenceTasks bounds a revise's evidence_task_ids.
	MaxEvidenceTasks = 10
	// MaxTaskIDLen bounds one task id ("task-<uuid>", "turn-<session>-<n>").
	MaxTaskIDLen = 200
	// MaxConflicts bounds one lesson's declared conflicts.
	MaxConflicts = 6
	// MaxNoteRunes bounds a conflict's note.
	MaxNoteRunes = 300
)

// Reflection is one validated reflection: the agent's or the model's
// assessment of a task and the lessons it declares.
type Reflection struct {
	// TaskID is the task_id the agent's call named, if any; the caller
	// checks it against the task being reflected.
	TaskID string `json:"task_id,omitempty"`
	// Assessment is the reflection's judgement of the task.
	Assessment string `json:"assessment"`
	// Source is the agent's own claim of where the lessons came from; it
	// is copied into each lesson's Fields.Source.
	Source  string `json:"source,omitempty"`
	Lessons []Item `json:"lessons"`
}

// Item is one lesson of a reflection, as declared.
type Item struct {
	// Index is its position in the reflection's lessons.
	Index    int         `json:"index"`
	Relation Relation    `json:"relation"`
	Kind     memory.Kind `json:"kind,omitempty"`
	// Scope defaults to reflection (the task's session).
	Scope memory.LessonScope `json:"scope,omitempty"`
	// SessionID is the named session of a session-scope lesson.
	SessionID string `json:"session_id,omitempty"`
	// Fields are the lesson (new, revise); zero for repeat and none. When
	// a review narrowed the lesson, Fields.Narrowed is the critique's
	// scope.
	Fields memory.LessonFields `json:"fields,omitzero"`
	// TargetID is the stored lesson a repeat or revise names.
	TargetID int64 `json:"target_id,omitempty"`
	// EvidenceTaskIDs are a revise's evidence: failed tasks that had the
	// target in force when they started.
	EvidenceTaskIDs []string   `json:"evidence_task_ids,omitempty"`
	Conflicts       []Conflict `json:"conflicts,omitempty"`
	// Critique is the lesson's adversarial review, when it has one.
	Critique *Critique `json:"critique,omitempty"`
}

// Conflict is a declared tension with a stored lesson; it is stored as a
// link and never adjudicated.
type Conflict struct {
	With int64               `json:"with"`
	Kind memory.ConflictKind `json:"kind"`
	Note string              `json:"note,omitempty"`
}

// Stores reports whether the item writes a lesson: new and revise do,
// unless their review withdrew them; repeat and none do not (a repeat adds
// evidence to its target).
func (it Item) Stores() bool {
	if it.Critique != nil && it.Critique.Verdict == Withdrawn {
		return false
	}
	return it.Relation == New || it.Relation == Revise
}

// Withdrawn reports whether the item's review withdrew it.
func (it Item) Withdrawn() bool { return it.Critique != nil && it.Critique.Verdict == Withdrawn }

// Verdict sums up the reviews of a reflection for its record: "" when no
// lesson has a critique; withdrawn when every reviewed lesson was
// withdrawn; narrowed when any was narrowed; else holds.
func (r Reflection) Verdict() Verdict {
	var reviewed, withdrawn int
	narrowed := false
	for _, it := range r.Lessons {
		if it.Critique == nil {
			continue
		}
		reviewed++
		switch it.Critique.Verdict {
		case Withdrawn:
			withdrawn++
		case Narrowed:
			narrowed = true
		}
	}
	switch {
	case reviewed == 0:
		return ""
	case withdrawn == reviewed:
		return Withdrawn
	case narrowed:
		return Narrowed
	}
	return Holds
}

// Storing counts the lessons the reflection writes (new and revise not
// withdrawn): a withdrawn-only reflection records 0.
func (r Reflection) Storing() int {
	n := 0
	for _, it := range r.Lessons {
		if it.Stores() {
			n++
		}
	}
	return n
}
