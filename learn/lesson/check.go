package lesson

import (
	"fmt"
	"strings"

	"github.com/mullhq/mull/learn/memory"
)

// The rules the structure checker applies (the seed's `lessons.mjs check`:
// references, states, scopes, boundaries). A Problem names one.
const (
	// RuleFields: a field is missing, misplaced or malformed for the kind
	// (ValidateFields).
	RuleFields = "fields"
	// RuleScope: the scope disagrees with workspace, scope_session or
	// session_id (CheckScope).
	RuleScope = "scope"
	// RuleBoundary: a lesson outside the reflection scope declares no
	// boundary.
	RuleBoundary = "boundary"
	// RuleState: the state disagrees with the timeline (every non-active
	// state sets invalid_at, an active one has none, a superseded one
	// names its superseder or a reason).
	RuleState = "state"
	// RuleSupersededBy: superseded_by names no lesson, or itself.
	RuleSupersededBy = "superseded_by"
	// RulePromotedFrom: promoted_from names no lesson, itself, or a loop.
	RulePromotedFrom = "promoted_from"
	// RuleConflict: a declared conflict names a missing lesson, links a
	// lesson to itself, or has an unknown kind.
	RuleConflict = "conflict"
)

// Problem is one thing the structure checker found: which lesson, which
// rule, and what is wrong.
type Problem struct {
	ID     int64
	Rule   string
	Detail string
}

func (p Problem) String() string { return lessonTag(p.ID) + " " + p.Rule + ": " + p.Detail }

// Check is the structure checker over a library's lessons (every state,
// history included) and its declared conflicts. It checks structure only:
// that a boundary is declared, not that it is right; that a conflict's
// ends exist, not who wins (the seed's 2.5: the model judges semantics).
// Memories of other kinds, and free-text lessons from before the lesson
// model (no fields and no scope), are outside it; they only count as
// missing targets. Problems come in input order, each lesson's by rule,
// then the links'.
func Check(lessons []memory.Memory, links []memory.Conflict) []Problem {
	byID := make(map[int64]memory.Memory, len(lessons))
	for _, m := range lessons {
		byID[m.ID] = m
	}
	isLesson := func(id int64) bool {
		m, ok := byID[id]
		return ok && m.Kind.Structured()
	}
	var out []Problem
	for _, m := range lessons {
		if !m.Kind.Structured() || (m.Lesson == nil && m.Scope == "") {
			continue
		}
		add := func(rule, format string, args ...any) {
			out = append(out, Problem{ID: m.ID, Rule: rule, Detail: fmt.Sprintf(format, args...)})
		}
		if m.Lesson == nil {
			add(RuleFields, "a %s in scope %s has no structured fields", m.Kind, ScopeOf(m))
		} else if err := ValidateFields(m.Kind, memory.LessonReflection, *m.Lesson); err != nil {
			// Checked as if in reflection, so a missing boundary is
			// reported once, under its own rule.
			add(RuleFields, "%v", err)
		}
		if err := CheckScope(m); err != nil {
			add(RuleScope, "%v", err)
		}
		if m.Scope != memory.LessonReflection && (m.Lesson == nil || strings.TrimSpace(m.Lesson.Boundary) == "") {
			add(RuleBoundary, "a %s lesson must declare why it belongs there (boundary)", ScopeOf(m))
		}
		checkState(m, add)
		switch by := m.SupersededBy; {
		case by == 0:
		case by == m.ID:
			add(RuleSupersededBy, "names the lesson itself")
		case !isLesson(by):
			add(RuleSupersededBy, "names %s, which is not a lesson here", lessonTag(by))
		}
		switch from := m.PromotedFromID; {
		case from == 0:
		case from == m.ID:
			add(RulePromotedFrom, "names the lesson itself")
		case !isLesson(from):
			add(RulePromotedFrom, "names %s, which is not a lesson here", lessonTag(from))
		case promotionLoops(m, byID):
			add(RulePromotedFrom, "the chain from %s loops back to this lesson", lessonTag(from))
		}
	}
	for _, l := range links {
		add := func(format string, args ...any) {
			out = append(out, Problem{ID: l.From, Rule: RuleConflict, Detail: fmt.Sprintf(format, args...)})
		}
		switch {
		case !knownConflict(l.Kind):
			add("kind %q is not one of condition, goal, contradiction, apparent", l.Kind)
		case l.From == l.To:
			add("declared with itself")
		case !isLesson(l.From):
			add("declared from %s, which is not a lesson here", lessonTag(l.From))
		case !isLesson(l.To):
			add("declared with %s, which is not a lesson here", lessonTag(l.To))
		}
	}
	return out
}

// checkState reports where m's state and its timeline disagree.
func checkState(m memory.Memory, add func(rule, format string, args ...any)) {
	st := StateOf(m)
	switch st {
	case memory.StateActive, memory.StateSuperseded, memory.StateDeprecated, memory.StateDeleted:
	default:
		add(RuleState, "%q is not one of active, superseded, deprecated, deleted", m.State)
		return
	}
	switch {
	case st == memory.StateActive && !m.InvalidAt.IsZero():
		add(RuleState, "active but invalid_at is set (%s)", m.InvalidAt.UTC().Format("2006-01-02T15:04:05Z"))
	case st != memory.StateActive && m.InvalidAt.IsZero():
		add(RuleState, "%s but invalid_at is not set", st)
	}
	switch {
	case st == memory.StateSuperseded && m.SupersededBy == 0 && strings.TrimSpace(m.InvalidReason) == "":
		add(RuleState, "superseded, but names neither a superseder (superseded_by) nor a reason")
	case st != memory.StateSuperseded && st != memory.StateDeleted && m.SupersededBy != 0:
		add(RuleState, "%s but superseded_by is set (%s)", st, lessonTag(m.SupersededBy))
	}
}

// promotionLoops reports whether following promoted_from from m comes
// back to m.
func promotionLoops(m memory.Memory, byID map[int64]memory.Memory) bool {
	seen := map[int64]bool{}
	for x := m.PromotedFromID; x != 0 && !seen[x]; x = byID[x].PromotedFromID {
		if x == m.ID {
			return true
		}
		seen[x] = true
	}
	return false
}

func knownConflict(k memory.ConflictKind) bool {
	switch k {
	case memory.ConflictCondition, memory.ConflictGoal, memory.ConflictContradiction, memory.ConflictApparent:
		return true
	}
	return false
}
