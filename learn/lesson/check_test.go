package lesson

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
)

// A clean library: every kind, every scope, a promotion, a supersede, a
// deprecation, a tombstone and a conflict.
func cleanLibrary() ([]memory.Memory, []memory.Conflict) {
	g := scoped(1, memory.LessonGlobal, "", "")
	w := scoped(2, memory.LessonWorkspace, "/src/app", "")
	s := scoped(3, memory.LessonSession, "/src/app", "s-2")
	s.PromotedFromID = 4
	r := scoped(4, memory.LessonReflection, "/src/app", "s-1")
	r.Lesson.Boundary = ""
	r.Text = Line(r)
	old := scoped(5, memory.LessonGlobal, "", "")
	old, _ = Supersede(old, 1, "", scopeNow)
	dep := scoped(6, memory.LessonGlobal, "", "")
	dep, _ = Deprecate(dep, "no longer recommended", scopeNow)
	del := scoped(7, memory.LessonGlobal, "", "")
	del, _ = Delete(del, "wrong", scopeNow)
	f := fieldsMemory(memory.Failure, memory.LessonGlobal, memory.LessonFields{Problem: "删除了记忆无法恢复", Avoid: "直接删除", Boundary: "适用于所有删除"})
	f.ID = 8
	legacy := memory.Memory{ID: 9, Kind: memory.Lesson, Text: "free text from before the model"}
	fact := memory.Memory{ID: 10, Kind: memory.Fact, Text: "a fact"}
	return []memory.Memory{g, w, s, r, old, dep, del, f, legacy, fact},
		[]memory.Conflict{{From: 1, To: 2, Kind: memory.ConflictCondition}, {From: 8, To: 4, Kind: memory.ConflictApparent}}
}

func TestCheckClean(t *testing.T) {
	lessons, links := cleanLibrary()
	if ps := Check(lessons, links); len(ps) != 0 {
		t.Fatalf("Check(clean) = %v", ps)
	}
}

func TestCheckFindsEachRule(t *testing.T) {
	edit := func(id int64, f func(*memory.Memory)) func([]memory.Memory) []memory.Memory {
		return func(ms []memory.Memory) []memory.Memory {
			for i := range ms {
				if ms[i].ID == id {
					if ms[i].Lesson != nil {
						c := *ms[i].Lesson
						ms[i].Lesson = &c
					}
					f(&ms[i])
				}
			}
			return ms
		}
	}
	cases := []struct {
		name  string
		edit  func([]memory.Memory) []memory.Memory
		links []memory.Conflict
		want  []string // "L<id> rule"
	}{
		{"no boundary outside reflection", edit(2, func(m *memory.Memory) { m.Lesson.Boundary = "" }), nil, []string{"L2 boundary"}},
		{"no boundary in reflection is fine", edit(4, func(m *memory.Memory) { m.Lesson.Boundary = "" }), nil, nil},
		{"missing correction", edit(1, func(m *memory.Memory) { m.Lesson.Correction = "" }), nil, []string{"L1 fields"}},
		{"structured kind without fields", edit(2, func(m *memory.Memory) { m.Lesson = nil }), nil, []string{"L2 fields", "L2 boundary"}},
		{"global with a workspace", edit(1, func(m *memory.Memory) { m.Workspace = "/src/app" }), nil, []string{"L1 scope"}},
		{"reflection of another session", edit(4, func(m *memory.Memory) { m.SessionID = "s-9" }), nil, []string{"L4 scope"}},
		{"session without its session", edit(3, func(m *memory.Memory) { m.ScopeSession = "" }), nil, []string{"L3 scope"}},
		{"deprecated without invalid_at", edit(6, func(m *memory.Memory) { m.InvalidAt = time.Time{} }), nil, []string{"L6 state"}},
		{"active with invalid_at", edit(1, func(m *memory.Memory) { m.State = memory.StateActive; m.InvalidAt = scopeNow }), nil, []string{"L1 state"}},
		{"superseded with neither superseder nor reason", edit(5, func(m *memory.Memory) { m.SupersededBy = 0; m.InvalidReason = "" }), nil, []string{"L5 state"}},
		{"superseded by a missing lesson", edit(5, func(m *memory.Memory) { m.SupersededBy = 99 }), nil, []string{"L5 superseded_by"}},
		{"superseded by itself", edit(5, func(m *memory.Memory) { m.SupersededBy = 5 }), nil, []string{"L5 superseded_by"}},
		{"active but superseded_by set", edit(1, func(m *memory.Memory) { m.SupersededBy = 2 }), nil, []string{"L1 state"}},
		{"unknown state", edit(1, func(m *memory.Memory) { m.State = "archived" }), nil, []string{"L1 state"}},
		{"promoted from a missing lesson", edit(3, func(m *memory.Memory) { m.PromotedFromID = 99 }), nil, []string{"L3 promoted_from"}},
		{"promoted from a fact", edit(3, func(m *memory.Memory) { m.PromotedFromID = 10 }), nil, []string{"L3 promoted_from"}},
		{"promoted from itself", edit(3, func(m *memory.Memory) { m.PromotedFromID = 3 }), nil, []string{"L3 promoted_from"}},
		{"promotion loop", edit(4, func(m *memory.Memory) { m.PromotedFromID = 3 }), nil, []string{"L3 promoted_from", "L4 promoted_from"}},
		{"conflict with a missing lesson", nil, []memory.Conflict{{From: 1, To: 99, Kind: memory.ConflictGoal}}, []string{"L1 conflict"}},
		{"conflict from a missing lesson", nil, []memory.Conflict{{From: 98, To: 1, Kind: memory.ConflictGoal}}, []string{"L98 conflict"}},
		{"conflict with itself", nil, []memory.Conflict{{From: 1, To: 1, Kind: memory.ConflictGoal}}, []string{"L1 conflict"}},
		{"conflict of unknown kind", nil, []memory.Conflict{{From: 1, To: 2, Kind: "tension"}}, []string{"L1 conflict"}},
		{"conflict with a fact", nil, []memory.Conflict{{From: 1, To: 10, Kind: memory.ConflictGoal}}, []string{"L1 conflict"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lessons, links := cleanLibrary()
			if c.edit != nil {
				lessons = c.edit(lessons)
			}
			links = append(links, c.links...)
			var got []string
			for _, p := range Check(lessons, links) {
				got = append(got, fmt.Sprintf("%s %s", lessonTag(p.ID), p.Rule))
				if p.Detail == "" {
					t.Errorf("%v: no detail", p)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("Check = %v, want %v", Check(lessons, links), c.want)
			}
		})
	}
}

func TestProblemString(t *testing.T) {
	p := Problem{ID: 12, Rule: RuleBoundary, Detail: "a global lesson must declare why it belongs there (boundary)"}
	if got, want := p.String(), "L12 boundary: a global lesson must declare why it belongs there (boundary)"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
}
