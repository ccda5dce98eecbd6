package memory

import "time"

// The structured-lesson model of the dsh-lessons seed (000). A lesson is a
// memory of kind Lesson, Directive or Failure: its Text is a one-line
// rendering (what search, duplicate folding and the trust gate read) and its
// Lesson field holds the seed's structured fields. Rules over these types
// live in learn/lesson; this file only names them.

// The structured kinds besides Lesson (a heuristic to weigh, the seed's
// default).
const (
	// Directive is a required method: applied, not weighed ("Required
	// method"). Its correction is required.
	Directive Kind = "directive"
	// Failure is an action that produced a bad outcome: a constraint, shown
	// in its own Known failures block. It needs avoid, not correction.
	Failure Kind = "failure"
)

// Structured reports whether k is one of the seed-000 lesson kinds.
func (k Kind) Structured() bool { return k == Lesson || k == Directive || k == Failure }

// LessonScope is who a lesson is shown to (the seed's three scopes plus
// mull's workspace scope, the seed's missing piece, limitation 6).
type LessonScope string

// The lesson scopes.
const (
	// LessonGlobal: every session of every workspace.
	LessonGlobal LessonScope = "global"
	// LessonWorkspace: every session of one workspace (Memory.Workspace).
	LessonWorkspace LessonScope = "workspace"
	// LessonSession: one named session (Memory.ScopeSession).
	LessonSession LessonScope = "session"
	// LessonReflection: the session it was reflected in (Memory.ScopeSession,
	// its source session).
	LessonReflection LessonScope = "reflection"
)

// LessonScopes lists the scopes in the order the digest groups them.
var LessonScopes = []LessonScope{LessonGlobal, LessonWorkspace, LessonSession, LessonReflection}

// State is a memory's lifecycle. Nothing is removed: every state but active
// sets InvalidAt, so "what was believed at T" stays answerable.
type State string

// The states.
const (
	StateActive State = "active"
	// StateSuperseded: replaced by a newer version (SupersededBy) or a
	// newer memory.
	StateSuperseded State = "superseded"
	// StateDeprecated: no longer recommended, text and history kept.
	StateDeprecated State = "deprecated"
	// StateDeleted: a tombstone; never served again.
	StateDeleted State = "deleted"
)

// Confidence is the writer's own rating of a lesson.
type Confidence string

// The confidences, in the seed's order of precedence.
const (
	ConfidenceHigh   Confidence = "high"
	ConfidenceMedium Confidence = "medium"
	ConfidenceLow    Confidence = "low"
)

// LessonFields are the seed's structured fields of a lesson. Source and
// SourceText are the agent's own claim of where the lesson came from; the
// machine fields (task, session, job, time) are Memory's. SourceText is
// never injected into a prompt.
type LessonFields struct {
	// Problem is what happened: the observable phenomenon.
	Problem string `json:"problem"`
	// Attempted is what was done then, without judging it.
	Attempted string `json:"attempted,omitempty"`
	// Correction is what to do instead; required for lesson and directive,
	// and never narrower than Problem.
	Correction string `json:"correction,omitempty"`
	// AppliesWhen is the trigger: when the lesson applies.
	AppliesWhen string     `json:"applies_when,omitempty"`
	Confidence  Confidence `json:"confidence,omitempty"`
	// Avoid is what not to do (failures; required there).
	Avoid string `json:"avoid,omitempty"`
	// Instead is a known alternative to Avoid (failures, optional).
	Instead string `json:"instead,omitempty"`
	// Boundary says why the lesson belongs to its scope; required outside
	// the reflection scope.
	Boundary   string `json:"boundary,omitempty"`
	Source     string `json:"source,omitempty"`
	SourceText string `json:"source_text,omitempty"`
	// Narrowed is the critique's scope when an adversarial review narrowed
	// the lesson: the condition under which the old way is still better
	// (rendered under [BOUNDARIES]).
	Narrowed string `json:"narrowed,omitempty"`
}

// ConflictKind is a declared tension between two lessons. mull stores and
// shows conflicts side by side; it never resolves them.
type ConflictKind string

// The conflict kinds of the seed.
const (
	// ConflictCondition: the applicability conditions differ.
	ConflictCondition ConflictKind = "condition"
	// ConflictGoal: the goals differ.
	ConflictGoal ConflictKind = "goal"
	// ConflictContradiction: a direct contradiction under the same condition.
	ConflictContradiction ConflictKind = "contradiction"
	// ConflictApparent: a general rule and a specific exception.
	ConflictApparent ConflictKind = "apparent"
)

// Conflict links two lessons; it is stored as a link, never adjudicated.
type Conflict struct {
	From, To   int64
	Kind       ConflictKind
	Note       string
	RecordedAt time.Time
}
