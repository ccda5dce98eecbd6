package reflection_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/reflection"
)

type m = map[string]any
type a = []any

// newLesson is a valid new lesson; tests change one thing in a copy.
func newLesson() m {
	return m{"relation": "new", "problem": "declared done right after editing; the change had a visible defect",
		"attempted": "reported completion without running anything", "correction": "run the smallest test that exercises the failure path before delivering",
		"applies_when": "about to deliver after changing code", "confidence": "high"}
}

func doc(lessons ...m) m {
	arr := a{}
	for _, l := range lessons {
		arr = append(arr, l)
	}
	return m{"assessment": "failed: the pager was off by one", "source": "task review", "lessons": arr}
}

func with(base m, kv ...any) m {
	out := m{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func parse(t *testing.T, v any, opts reflection.Options) (reflection.Reflection, error) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return reflection.Parse(b, opts)
}

// fieldOf returns the refused path, failing the test on any other error.
func fieldOf(t *testing.T, err error) string {
	t.Helper()
	var fe *reflection.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FieldError", err, err)
	}
	return fe.Field
}

func TestParseRefusals(t *testing.T) {
	l := newLesson()
	many := func(n int) m {
		ls := make([]m, n)
		for i := range ls {
			ls[i] = with(l, "problem", fmt.Sprintf("problem %d", i))
		}
		return doc(ls...)
	}
	cases := []struct {
		name  string
		in    any
		field string
		want  string
	}{
		{"not an object", a{}, "", "must be an object"},
		{"unknown top field", with(doc(l), "lesson", 1), "lesson", "unknown field"},
		{"no assessment", with(doc(l), "assessment", nil), "assessment", "required"},
		{"blank assessment", with(doc(l), "assessment", "  "), "assessment", "required"},
		{"no lessons", with(doc(l), "lessons", nil), "lessons", "required"},
		{"lessons not an array", with(doc(l), "lessons", "x"), "lessons", "must be an array"},
		{"too many lessons", many(reflection.MaxLessons + 1), "lessons", "at most 6"},
		{"unknown lesson field", doc(l, with(l, "rationale", "x")), "lessons[1].rationale", "unknown field"},
		{"no relation", doc(with(l, "relation", nil)), "lessons[0].relation", "required"},
		{"bad relation", doc(l, l, with(l, "relation", "update")), "lessons[2].relation", `"update" is not one of new, repeat, revise, none`},
		{"bad kind", doc(with(l, "kind", "rule")), "lessons[0].kind", "not one of"},
		{"bad scope", doc(with(l, "scope", "project")), "lessons[0].scope", "not one of"},
		{"bad confidence", doc(with(l, "confidence", "certain")), "lessons[0].confidence", "not one of"},
		{"field not a string", doc(with(l, "correction", 3)), "lessons[0].correction", "must be a string"},
		{"field too long", doc(with(l, "attempted", strings.Repeat("长", reflection.MaxFieldRunes+1))), "lessons[0].attempted", "longer than 180"},
		{"lesson needs problem", doc(with(l, "problem", nil)), "lessons[0].problem", "required for a lesson"},
		{"lesson needs correction", doc(with(l, "correction", nil)), "lessons[0].correction", "required for a lesson"},
		{"failure needs avoid", doc(with(l, "kind", "failure", "correction", nil)), "lessons[0].avoid", "required for a failure"},
		{"problem and pattern differ", doc(with(l, "pattern", "other")), "lessons[0].pattern", "differ"},
		{"global needs boundary", doc(with(l, "scope", "global")), "lessons[0].boundary", "required outside the reflection scope"},
		{"session needs session_id", doc(with(l, "scope", "session", "boundary", "b")), "lessons[0].session_id", "required for scope session"},
		{"session_id outside session scope", doc(with(l, "session_id", "s1")), "lessons[0].session_id", "only a session-scope"},
		{"new with target", doc(with(l, "target_id", 4)), "lessons[0].target_id", "names no target"},
		{"repeat without target", doc(m{"relation": "repeat"}), "lessons[0].target_id", "required for repeat"},
		{"bad target", doc(m{"relation": "repeat", "target_id": "E1x"}), "lessons[0].target_id", "not a lesson id"},
		{"zero target", doc(m{"relation": "repeat", "target_id": 0}), "lessons[0].target_id", "not a lesson id"},
		{"revise without target", doc(with(l, "relation", "revise", "evidence_task_ids", a{"task-1"})), "lessons[0].target_id", "required"},
		{"evidence not strings", doc(with(l, "relation", "revise", "target_id", 9, "evidence_task_ids", a{"task-1", 7})), "lessons[0].evidence_task_ids[1]", "task id string"},
		{"evidence twice", doc(with(l, "relation", "revise", "target_id", 9, "evidence_task_ids", a{"task-1", "task-1"})), "lessons[0].evidence_task_ids[1]", "listed twice"},
		{"a correction narrower than its problem", doc(with(l, "problem", "the build broke on every platform after the dependency bump, and the release was cut anyway", "correction", "retry")), "lessons[0].correction", "narrower"},
		{"a multi-line field", doc(with(l, "applies_when", "when\nreleasing")), "lessons[0].applies_when", "one line"},
		{"revise needs fields", doc(m{"relation": "revise", "target_id": 9, "evidence_task_ids": a{"task-1"}}), "lessons[0].problem", "required for a lesson"},
		{"evidence on new", doc(with(l, "evidence_task_ids", a{"task-1"})), "lessons[0].evidence_task_ids", "only a revise"},
		{"none with target", doc(m{"relation": "none", "target_id": 3}), "lessons[0].target_id", "stores nothing"},
		{"same target twice", doc(m{"relation": "repeat", "target_id": 3}, with(l, "relation", "revise", "target_id", "3", "evidence_task_ids", a{"task-1"})), "lessons[1].target_id", "already the target of lessons[0]"},
		{"conflict without kind", doc(with(l, "conflicts", a{m{"with": 2}})), "lessons[0].conflicts[0].kind", "required"},
		{"conflict bad kind", doc(with(l, "conflicts", a{m{"with": 2, "kind": "tension"}})), "lessons[0].conflicts[0].kind", "not one of"},
		{"conflict unknown field", doc(with(l, "conflicts", a{m{"with": 2, "kind": "goal", "why": "x"}})), "lessons[0].conflicts[0].why", "unknown field"},
		{"conflict without with", doc(with(l, "conflicts", a{m{"kind": "goal"}})), "lessons[0].conflicts[0].with", "required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse(t, c.in, reflection.Options{})
			if err == nil {
				t.Fatal("accepted")
			}
			if f := fieldOf(t, err); f != c.field {
				t.Errorf("field = %q, want %q (%v)", f, c.field, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// A revise without evidence is the precedent gate's to refuse (and count),
// not the schema's.
func TestParseLeavesMissingEvidenceToTheGate(t *testing.T) {
	l := newLesson()
	for _, ev := range []any{nil, a{}} {
		in := with(l, "relation", "revise", "target_id", 9)
		if ev != nil {
			in = with(in, "evidence_task_ids", ev)
		}
		r, err := parse(t, doc(in), reflection.Options{})
		if err != nil || len(r.Lessons[0].EvidenceTaskIDs) != 0 || !r.Lessons[0].Stores() {
			t.Fatalf("evidence %v: %+v, %v", ev, r, err)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	l := newLesson()
	r, err := parse(t, doc(
		l,
		with(l, "problem", nil, "pattern", "legacy pattern", "scope", "global", "boundary", "holds for any repo"),
		m{"relation": "repeat", "target_id": "#12", "problem": "ignored"},
		with(l, "relation", "revise", "target_id", 14, "evidence_task_ids", a{" task-a ", "turn-s-3"}, "kind", "failure", "correction", nil, "avoid", "editing before reading",
			"conflicts", a{m{"with": "id 15", "kind": "apparent", "note": "exception for generated files"}}),
		m{"relation": "none"},
		with(l, "scope", "session", "session_id", "session-1", "boundary", "only that project"),
	), reflection.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Lessons) != 6 || r.Assessment == "" || r.Source != "task review" {
		t.Fatalf("reflection = %+v", r)
	}
	first := r.Lessons[0]
	if first.Kind != memory.Lesson || first.Scope != memory.LessonReflection || first.Fields.Confidence != memory.ConfidenceHigh || first.Fields.Source != "task review" {
		t.Errorf("defaults: %+v", first)
	}
	if got := r.Lessons[1].Fields.Problem; got != "legacy pattern" {
		t.Errorf("pattern read as %q, want it as problem", got)
	}
	if rep := r.Lessons[2]; rep.TargetID != 12 || rep.Fields != (memory.LessonFields{}) || rep.Stores() {
		t.Errorf("repeat = %+v: its fields are ignored and it stores no lesson", rep)
	}
	rev := r.Lessons[3]
	if rev.TargetID != 14 || strings.Join(rev.EvidenceTaskIDs, ",") != "task-a,turn-s-3" || rev.Kind != memory.Failure || !rev.Stores() {
		t.Errorf("revise = %+v", rev)
	}
	if len(rev.Conflicts) != 1 || rev.Conflicts[0] != (reflection.Conflict{With: 15, Kind: memory.ConflictApparent, Note: "exception for generated files"}) {
		t.Errorf("conflicts = %+v", rev.Conflicts)
	}
	if r.Lessons[4].Stores() || r.Lessons[5].SessionID != "session-1" || r.Lessons[5].Index != 5 {
		t.Errorf("none / session: %+v %+v", r.Lessons[4], r.Lessons[5])
	}
	if r.Storing() != 4 || r.Verdict() != "" {
		t.Errorf("storing %d verdict %q", r.Storing(), r.Verdict())
	}
}

// TestMaxLessons pins the cap: 6 lessons pass, 7 are refused.
func TestMaxLessons(t *testing.T) {
	for n, ok := range map[int]bool{reflection.MaxLessons - 1: true, 6: true, 7: false} {
		ls := make([]m, n)
		for i := range ls {
			ls[i] = m{"relation": "none"}
		}
		if _, err := parse(t, doc(ls...), reflection.Options{}); (err == nil) != ok {
			t.Errorf("%d lessons: err = %v", n, err)
		}
	}
}

func TestParseDocument(t *testing.T) {
	for name, in := range map[string]string{
		"not json":    `{"assessment": `,
		"two values":  `{"assessment":"a","lessons":[]} {}`,
		"too large":   `{"assessment":"` + strings.Repeat("x", reflection.MaxBytes) + `","lessons":[]}`,
		"bad utf8":    "{\"assessment\":\"\xff\",\"lessons\":[]}",
		"null lesson": `{"assessment":"a","lessons":[null]}`,
	} {
		if _, err := reflection.Parse([]byte(in), reflection.Options{}); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			fieldOf(t, err)
		}
	}
	r, err := reflection.Parse([]byte(`{"task_id":"task-1","assessment":"nothing new","lessons":[]}`), reflection.Options{Adversarial: true})
	if err != nil || r.TaskID != "task-1" || len(r.Lessons) != 0 {
		t.Fatalf("empty reflection: %+v %v", r, err)
	}
}

// The model and the agent write only the scopes their caller allows, and
// name stored lessons the way mull shows them ("L12").
func TestParseScopesAndRefs(t *testing.T) {
	l := newLesson()
	own := reflection.Options{Scopes: []memory.LessonScope{memory.LessonReflection, memory.LessonWorkspace}}
	_, err := parse(t, doc(with(l, "scope", "global", "boundary", "true of every repository")), own)
	if err == nil || fieldOf(t, err) != "lessons[0].scope" || !strings.Contains(err.Error(), "mull lessons move") {
		t.Fatalf("global under a reflection's scopes: got %v, want lessons[0].scope refused", err)
	}
	if _, err := parse(t, doc(with(l, "scope", "workspace", "boundary", "this repository's release flow")), own); err != nil {
		t.Fatalf("workspace under a reflection's scopes: %v", err)
	}
	r, err := parse(t, doc(m{"relation": "repeat", "target_id": "L42"}, with(l, "conflicts", a{m{"with": "L7", "kind": "goal"}})), own)
	if err != nil {
		t.Fatalf("ids as mull shows them: %v", err)
	}
	if r.Lessons[0].TargetID != 42 || r.Lessons[1].Conflicts[0].With != 7 {
		t.Fatalf("ids read as %d and %d, want 42 and 7", r.Lessons[0].TargetID, r.Lessons[1].Conflicts[0].With)
	}
}
