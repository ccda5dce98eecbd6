package reflection

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
)

// Options are the switches a reflection is validated under.
type Options struct {
	// Adversarial is reflection.adversarial_review: every new or revised
	// lesson must carry a critique.
	Adversarial bool
	// Scopes, when set, are the scopes this reflection may write. The
	// model and the agent read an untrusted session, so their callers
	// leave out global (every workspace's prompt) and session (another
	// session's): those are an operator's move.
	Scopes []memory.LessonScope
}

// The keys of a reflection and of one lesson.
var (
	topKeys    = []string{"task_id", "assessment", "source", "lessons", "critique"}
	lessonKeys = []string{"relation", "kind", "scope", "session_id", "problem", "pattern", "attempted", "correction",
		"applies_when", "confidence", "avoid", "instead", "boundary", "target_id", "evidence_task_ids", "conflicts", "critique"}
	conflictKeys = []string{"with", "kind", "note"}
)

// Parse reads and validates a reflection. It is strict: an unknown field,
// a wrong type or a broken rule is refused with a *FieldError naming the
// JSON path, and nothing of a refused reflection is to be stored.
//
// A top-level "critique" (the shape POST /v1/tasks/{id}/reflect allows) is
// the critique of every new or revised lesson that has none of its own.
// The lesson fields are checked for presence and shape here (a new
// lesson's kind needs problem + correction, a failure problem + avoid, a
// scope other than reflection a boundary); the rules that need the store
// (the precedent gate, references) are the caller's.
func Parse(data []byte, opts Options) (Reflection, error) {
	if len(data) > MaxBytes {
		return Reflection{}, refuse("", "reflection is %d bytes, more than %d", len(data), MaxBytes)
	}
	if !utf8.Valid(data) {
		return Reflection{}, refuse("", "not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Reflection{}, refuse("", "not JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Reflection{}, refuse("", "more than one JSON value")
	}
	top, err := asObj("", v)
	if err != nil {
		return Reflection{}, err
	}
	return parseTop(top, opts)
}

func parseTop(top obj, opts Options) (Reflection, error) {
	var r Reflection
	var err error
	if err = top.done(topKeys...); err != nil {
		return r, err
	}
	if r.TaskID, err = top.str("task_id", MaxTaskIDLen); err != nil {
		return r, err
	}
	if r.Assessment, err = top.str("assessment", MaxAssessmentRunes); err != nil {
		return r, err
	}
	if r.Assessment == "" {
		return r, refuse("assessment", "required")
	}
	if r.Source, err = top.str("source", MaxSourceRunes); err != nil {
		return r, err
	}
	var shared *Critique
	if top.has("critique") {
		if shared, err = parseCritique(top.m["critique"], "critique"); err != nil {
			return r, err
		}
	}
	if !top.has("lessons") {
		return r, refuse("lessons", "required (an empty array when nothing was learnt)")
	}
	arr, err := top.array("lessons", MaxLessons)
	if err != nil {
		return r, err
	}
	targets := map[int64]int{}
	for i, v := range arr {
		it, err := parseItem(index("lessons", i), v, shared, opts)
		if err != nil {
			return r, err
		}
		it.Index = i
		if it.TargetID > 0 {
			if j, dup := targets[it.TargetID]; dup {
				return r, refuse(index("lessons", i)+".target_id", "lesson %d is already the target of lessons[%d]", it.TargetID, j)
			}
			targets[it.TargetID] = i
		}
		if it.Stores() {
			it.Fields.Source = r.Source
		}
		r.Lessons = append(r.Lessons, it)
	}
	return r, nil
}

func parseItem(path string, v any, shared *Critique, opts Options) (Item, error) {
	var it Item
	o, err := asObj(path, v)
	if err != nil {
		return it, err
	}
	if err = o.done(lessonKeys...); err != nil {
		return it, err
	}
	if !o.has("relation") {
		return it, refuse(o.at("relation"), "required: new, repeat, revise or none")
	}
	if it.Relation, err = enum(o, "relation", Relation(""), Relations...); err != nil {
		return it, err
	}
	if it.Relation == "" {
		return it, refuse(o.at("relation"), "required: new, repeat, revise or none")
	}
	switch it.Relation {
	case None:
		if o.has("target_id") {
			return it, refuse(o.at("target_id"), "a none stores nothing and names no lesson")
		}
		return it, nil
	case Repeat:
		// Adds evidence to its target; the lesson fields are ignored.
		if o.has("evidence_task_ids") {
			return it, refuse(o.at("evidence_task_ids"), "only a revise carries evidence")
		}
		it.TargetID, err = target(o)
		return it, err
	case New:
		if o.has("target_id") {
			return it, refuse(o.at("target_id"), "a new lesson names no target; use repeat or revise")
		}
	case Revise:
		if it.TargetID, err = target(o); err != nil {
			return it, err
		}
		if it.EvidenceTaskIDs, err = evidence(o); err != nil {
			return it, err
		}
	}
	if it.Relation != Revise && o.has("evidence_task_ids") {
		return it, refuse(o.at("evidence_task_ids"), "only a revise carries evidence")
	}
	if err = lessonPart(o, &it, opts); err != nil {
		return it, err
	}
	return it, review(o, &it, shared, opts)
}

func target(o obj) (int64, error) {
	if !o.has("target_id") {
		return 0, refuse(o.at("target_id"), "required for repeat and revise: the id of the lesson it names")
	}
	return lessonID(o.at("target_id"), o.m["target_id"])
}

// evidence reads a revise's evidence_task_ids. None at all passes here: the
// precedent gate (lesson.CheckEvidence) refuses that revise as no_evidence
// and counts the refusal, so one unsupported revise neither hides from
// `mull lessons stats` nor costs the rest of the reflection.
func evidence(o obj) ([]string, error) {
	arr, err := o.array("evidence_task_ids", MaxEvidenceTasks)
	if err != nil || len(arr) == 0 {
		return nil, err
	}
	ids := make([]string, 0, len(arr))
	for i, v := range arr {
		p := index(o.at("evidence_task_ids"), i)
		s, ok := v.(string)
		if !ok {
			return nil, refuse(p, "must be a task id string, got %s", kindOf(v))
		}
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			return nil, refuse(p, "empty task id")
		case len(s) > MaxTaskIDLen || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			return nil, refuse(p, "%q is not a task id", cutRunes(s, 40))
		case containsStr(ids, s):
			return nil, refuse(p, "task %s is listed twice", s)
		}
		ids = append(ids, s)
	}
	return ids, nil
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// lessonPart reads a new or revised lesson's kind, scope and fields.
func lessonPart(o obj, it *Item, opts Options) error {
	var err error
	if it.Kind, err = enum(o, "kind", memory.Lesson, memory.Lesson, memory.Directive, memory.Failure); err != nil {
		return err
	}
	if it.Scope, err = enum(o, "scope", memory.LessonReflection, memory.LessonScopes...); err != nil {
		return err
	}
	if len(opts.Scopes) > 0 && !slices.Contains(opts.Scopes, it.Scope) {
		return refuse(o.at("scope"), "%s is not a scope a reflection may write here (allowed: %s); an operator moves a lesson wider with 'mull lessons move'",
			it.Scope, joinScopes(opts.Scopes))
	}
	if it.SessionID, err = o.str("session_id", MaxTaskIDLen); err != nil {
		return err
	}
	switch {
	case it.Scope == memory.LessonSession && it.SessionID == "":
		return refuse(o.at("session_id"), "required for scope session: the session that sees the lesson")
	case it.Scope != memory.LessonSession && it.SessionID != "":
		return refuse(o.at("session_id"), "only a session-scope lesson names a session")
	}
	f := &it.Fields
	for _, s := range []struct {
		key string
		dst *string
	}{{"attempted", &f.Attempted}, {"correction", &f.Correction}, {"applies_when", &f.AppliesWhen},
		{"avoid", &f.Avoid}, {"instead", &f.Instead}, {"boundary", &f.Boundary}} {
		if *s.dst, err = o.str(s.key, MaxFieldRunes); err != nil {
			return err
		}
	}
	if err = problem(o, f); err != nil {
		return err
	}
	if f.Confidence, err = enum(o, "confidence", memory.Confidence(""),
		memory.ConfidenceLow, memory.ConfidenceMedium, memory.ConfidenceHigh); err != nil {
		return err
	}
	if err = required(o, it); err != nil {
		return err
	}
	it.Conflicts, err = conflicts(o)
	return err
}

// problem reads problem, or the legacy pattern the seed reads as problem.
func problem(o obj, f *memory.LessonFields) error {
	p, err := o.str("problem", MaxFieldRunes)
	if err != nil {
		return err
	}
	legacy, err := o.str("pattern", MaxFieldRunes)
	if err != nil {
		return err
	}
	if p != "" && legacy != "" && p != legacy {
		return refuse(o.at("pattern"), "both problem and pattern given and they differ; pattern is the old name of problem")
	}
	f.Problem = p
	if p == "" {
		f.Problem = legacy
	}
	return nil
}

// required applies the lesson model's own field rules (lesson.ValidateFields:
// the seed's table of required fields per kind, one line each within
// lesson.MaxFieldRunes, a correction not narrower than its problem, a
// boundary outside the reflection scope), so a reflection Parse accepts is
// one the store accepts, and a refusal names the lesson's JSON path.
func required(o obj, it *Item) error {
	if err := lesson.ValidateFields(it.Kind, it.Scope, it.Fields); err != nil {
		var fe *memory.FieldError
		if errors.As(err, &fe) {
			return refuse(o.at(fe.Field), "%s", fe.Problem)
		}
		return refuse(o.path, "%v", err)
	}
	return nil
}

func conflicts(o obj) ([]Conflict, error) {
	arr, err := o.array("conflicts", MaxConflicts)
	if err != nil {
		return nil, err
	}
	var out []Conflict
	for i, v := range arr {
		c, err := asObj(index(o.at("conflicts"), i), v)
		if err != nil {
			return nil, err
		}
		if err = c.done(conflictKeys...); err != nil {
			return nil, err
		}
		var x Conflict
		if x.With, err = lessonID(c.at("with"), c.m["with"]); err != nil {
			return nil, err
		}
		if !c.has("kind") {
			return nil, refuse(c.at("kind"), "required: condition, goal, contradiction or apparent")
		}
		if x.Kind, err = enum(c, "kind", memory.ConflictKind(""), memory.ConflictCondition, memory.ConflictGoal,
			memory.ConflictContradiction, memory.ConflictApparent); err != nil {
			return nil, err
		}
		if x.Note, err = c.str("note", MaxNoteRunes); err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// review attaches the lesson's critique (its own, else the shared one) and
// applies its verdict. Under adversarial review a new or revised lesson
// without one is refused.
func review(o obj, it *Item, shared *Critique, opts Options) error {
	c := shared
	if o.has("critique") {
		var err error
		if c, err = parseCritique(o.m["critique"], o.at("critique")); err != nil {
			return err
		}
	}
	if c == nil {
		if opts.Adversarial {
			return refuse(o.at("critique"), "required: adversarial review is on")
		}
		return nil
	}
	cc := *c
	it.Critique = &cc
	if cc.Verdict == Narrowed {
		if it.Fields.AppliesWhen == "" {
			return refuse(o.at("applies_when"), "narrowed without applies_when is refused: a narrowed lesson must say where it stops applying")
		}
		it.Fields.Narrowed = cc.Scope
	}
	return nil
}

func joinScopes(ss []memory.LessonScope) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}
