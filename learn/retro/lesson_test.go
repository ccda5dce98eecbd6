package retro_test

import (
	"errors"
	"testing"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
)

// A retro's LESSONS line "error -> root cause -> fix" is stored as a
// structured lesson: problem = the error and its root cause, correction =
// the fix, scope workspace with mull's boundary, no confidence, Text its
// one-line rendering; the retro's provenance is kept.
func TestPlanStructuresLessons(t *testing.T) {
	c := retro.Plan(retro.Output{Lessons: []retro.Entry{{Text: "go vet failed -> a printf verb mismatch -> run go vet ./... before committing", Importance: 7}}}, nil, src, now)
	if len(c.Add) != 1 || len(c.Rejected) != 0 {
		t.Fatalf("Add = %+v, Rejected = %+v", c.Add, c.Rejected)
	}
	m := c.Add[0]
	want := memory.LessonFields{Problem: "go vet failed (root cause: a printf verb mismatch)", Correction: "run go vet ./... before committing",
		Boundary: "learned by a session retro in this workspace"}
	if m.Kind != memory.Lesson || m.Scope != memory.LessonWorkspace || m.Lesson == nil || *m.Lesson != want {
		t.Fatalf("lesson = %s %s %+v; want %+v", m.Kind, m.Scope, m.Lesson, want)
	}
	if m.Text != lesson.Line(m) || m.Text != "go vet failed (root cause: a printf verb mismatch) → run go vet ./... before committing" {
		t.Errorf("Text = %q, want lesson.Line", m.Text)
	}
	if m.Origin != memory.OriginRetro || m.JobID != src.JobID || m.SessionID != src.SessionID || m.Workspace != src.Workspace || m.Importance != 7 {
		t.Errorf("provenance lost: %+v", m)
	}
	if err := lesson.Validate(m); err != nil {
		t.Errorf("not a valid lesson: %v", err)
	}

	// The global library (scope global) gets a global lesson.
	g := src
	g.Workspace = ""
	if c := retro.Plan(retro.Output{Lessons: []retro.Entry{{Text: "go vet failed -> a printf verb mismatch -> run go vet ./... before committing"}}}, nil, g, now); len(c.Add) != 1 ||
		c.Add[0].Scope != memory.LessonGlobal || c.Add[0].Lesson.Boundary != "learned by a session retro (global library)" {
		t.Fatalf("global retro lesson: %+v", c.Add)
	}
}

// The seed's rules hold for a retro's lesson too: a fix under a third of
// the error and its cause is refused naming the correction, and an
// instruction in one part quarantines the lesson (stored flagged).
func TestPlanLessonRules(t *testing.T) {
	c := retro.Plan(retro.Output{Lessons: []retro.Entry{{Text: "the deploy to staging failed with exit 137 -> the container ran out of memory -> retry"}}}, nil, src, now)
	var fe *memory.FieldError
	if len(c.Add) != 0 || len(c.Rejected) != 1 || !errors.As(c.Rejected[0].Err, &fe) || fe.Field != "correction" {
		t.Fatalf("narrow fix: Add %+v Rejected %+v", c.Add, c.Rejected)
	}
	c = retro.Plan(retro.Output{Lessons: []retro.Entry{{Text: "tests failed -> flaky network -> " + instruction}}}, nil, src, now)
	if len(c.Add) != 1 || !c.Add[0].Quarantined || c.Quarantined != 1 {
		t.Fatalf("instruction in the fix: %+v", c.Add)
	}
}
