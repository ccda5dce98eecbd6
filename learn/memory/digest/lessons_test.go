package digest_test

import (
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/memory/digest"
)

// lessonSized is a free-text workspace lesson with id whose item ("- L<id>
// <text>") and newline take exactly cost characters of the lessons quota.
func lessonSized(id int64, letter rune, cost int) memory.Memory {
	m := mem(memory.Lesson, "", 1)
	m.ID = id
	m.Text = string(letter) + strings.Repeat("·", cost-len("- L10 ")-2)
	return m
}

// The lessons section keeps the seed's lessons quota (900): items adding up
// to it are shown, one character more leaves the second out and says so.
func TestLessonsQuota(t *testing.T) {
	render := func(ms ...memory.Memory) digest.Output {
		return digest.Render(digest.Input{Now: now, Lessons: digest.Lessons{InForce: ms}}, digest.Options{})
	}
	fits := render(lessonSized(10, 'A', 200), lessonSized(11, 'B', 700))
	if s := section(t, fits, "lessons"); s.Entries != 2 || s.Used != 900 || s.Omitted != 0 {
		t.Errorf("lessons of 900 characters together: %+v, want both in quota 900", s)
	}
	over := render(lessonSized(10, 'A', 200), lessonSized(11, 'B', 701))
	if s := section(t, over, "lessons"); s.Entries != 1 || s.Used != 200 || s.Omitted != 1 {
		t.Errorf("lessons of 901 characters together: %+v, want the second left out", s)
	}
	if !strings.Contains(over.Text, "(+1 more; memory_search finds them)") {
		t.Errorf("the left-out lesson is not counted:\n%s", over.Text)
	}
}

func failure(id int64, avoid string) memory.Memory {
	m := mem(memory.Failure, "avoid: "+avoid, 1)
	m.ID, m.Scope = id, memory.LessonWorkspace
	m.Lesson = &memory.LessonFields{Avoid: avoid, Problem: "the build broke"}
	return m
}

// A failure lesson is shown under Known failures with the seed's
// constraint header, before every other lesson block, so it is the last
// lesson a shrunk section gives up.
func TestFailuresUnderKnownFailures(t *testing.T) {
	in := digest.Input{Now: now, Lessons: digest.Lessons{InForce: []memory.Memory{
		lessonSized(10, 'A', 300), failure(12, "editing a released migration"), lessonSized(11, 'B', 300)}}}
	out := digest.Render(in, digest.Options{})
	want := "### Lessons\n#### Known failures\n" +
		"Actions that produced a bad outcome. When the trigger matches, do not do this.\n" +
		"Unlike a lesson, this is not a heuristic to weigh — it is a constraint.\n" +
		"- L12 (workspace) avoid: editing a released migration\n  outcome: the build broke\n#### Lessons: this workspace\n- L10 A"
	if !strings.Contains(out.Text, want) {
		t.Fatalf("no Known failures block first:\n%s", out.Text)
	}
	// A quota that holds one item keeps the failure.
	small := digest.Render(in, digest.Options{Quotas: map[string]int{"lessons": 80}})
	if !strings.Contains(small.Text, "- L12 (workspace) avoid:") || strings.Contains(small.Text, "- L10 ") {
		t.Fatalf("quota 80 did not keep the failure alone:\n%s", small.Text)
	}
}

// Declared conflicts are shown side by side under [CONFLICTS], saying
// nothing was adjudicated.
func TestConflictsSideBySide(t *testing.T) {
	a, b := lessonSized(10, 'A', 40), lessonSized(11, 'B', 40)
	out := digest.Render(digest.Input{Now: now, Lessons: digest.Lessons{InForce: []memory.Memory{a, b},
		Links: []memory.Conflict{{From: 10, To: 11, Kind: memory.ConflictCondition}}}}, digest.Options{})
	want := "#### [CONFLICTS] The lessons below were declared to conflict. Nothing was adjudicated:\n" +
		"judge which one's condition holds here, and say why you follow the one you do.\n" +
		"- L10 vs L11 (condition: they apply under different conditions)\n  L10: " + a.Text + "\n  L11: " + b.Text
	if !strings.Contains(out.Text, want) {
		t.Fatalf("conflict not side by side:\n%s", out.Text)
	}
}
