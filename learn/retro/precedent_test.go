package retro_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
)

// The precedent gate on a retro's supersedes: a structured lesson needs
// evidence that passes lesson.CheckEvidence, a fact does not.
func TestGatePrecedent(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	structured := memory.Memory{ID: 12, Kind: memory.Lesson, Workspace: "/w", Scope: memory.LessonWorkspace, RecordedAt: now.Add(-time.Hour),
		Lesson: &memory.LessonFields{Problem: "go test hangs on the db", Correction: "use a short timeout", Boundary: "this repo"}}
	structured.Text = lesson.Line(structured)
	fact := memory.Memory{ID: 13, Kind: memory.Fact, Workspace: "/w", Text: "the staging host is tallow", RecordedAt: now.Add(-time.Hour)}
	existing := []memory.Memory{structured, fact}
	shown := map[int64]memory.Kind{12: memory.Lesson, 13: memory.Fact}
	tasks := map[string]lesson.TaskOutcome{
		"task-failed": {ID: "task-failed", Status: lesson.TaskFailed, Closed: true, EnvironmentIDs: []int64{11, 12}},
		"task-ok":     {ID: "task-ok", Status: lesson.TaskSucceeded, Closed: true, EnvironmentIDs: []int64{12}},
		"task-other":  {ID: "task-other", Status: lesson.TaskFailed, Closed: true, EnvironmentIDs: []int64{11, 13}},
		"task-open":   {ID: "task-open", Status: lesson.TaskOpen, EnvironmentIDs: []int64{12}},
	}
	find := func(id string) (lesson.TaskOutcome, bool) { o, ok := tasks[id]; return o, ok }
	for _, tc := range []struct {
		name     string
		evidence []string
		check    string // "" accepted
	}{
		{"no evidence", nil, lesson.GateNoEvidence},
		{"unknown task", []string{"task-nope"}, lesson.GateUnknownOrOpen},
		{"open task", []string{"task-open"}, lesson.GateUnknownOrOpen},
		{"succeeded task", []string{"task-ok"}, lesson.GateSucceeded},
		{"not in snapshot", []string{"task-other"}, lesson.GateNotInSnapshot},
		{"valid failed task", []string{"task-failed"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := retro.Output{Supersede: []retro.Supersede{{ID: retro.Ref{ID: 12}, Why: "wrong", Evidence: tc.evidence}, {ID: retro.Ref{ID: 13}}},
				Facts: []retro.Entry{{Text: "the build uses bazel now", Supersedes: []retro.Ref{{ID: 12}}}}}
			planned := retro.PlanShown(out, existing, shown, retro.Source{Workspace: "/w", JobID: 7}, now)
			c := retro.GatePrecedent(planned, existing, find)
			var lessonInvalidated, factInvalidated bool
			for _, inv := range c.Invalidate {
				lessonInvalidated = lessonInvalidated || inv.ID == 12
				factInvalidated = factInvalidated || inv.ID == 13
			}
			if !factInvalidated {
				t.Fatalf("the fact's supersede needs no evidence: %+v", c.Invalidate)
			}
			if len(c.Add) != 1 {
				t.Fatalf("the rest of the retro applies: add %+v", c.Add)
			}
			n := c.DroppedCounts()[retro.DropPrecedent]
			if tc.check == "" {
				if !lessonInvalidated || n != 0 || c.SupersedesByID != 2 {
					t.Fatalf("a valid failed task: invalidated %v, %d dropped, by id %d", lessonInvalidated, n, c.SupersedesByID)
				}
				return
			}
			// supersede[0] is refused; the fact entry's
			// supersedes[0] was dropped as not live by the plan already.
			if lessonInvalidated || n != 1 || c.SupersedesByID != 1 {
				t.Fatalf("refused: invalidated %v, %d dropped, by id %d: %+v", lessonInvalidated, n, c.SupersedesByID, c.Dropped)
			}
			d := c.Dropped[len(c.Dropped)-1]
			if d.Field != "supersede[0].id" || d.Ref.ID != 12 || !strings.HasPrefix(d.Detail, tc.check+": ") {
				t.Fatalf("dropped %+v, want supersede[0].id refused by %s", d, tc.check)
			}
			if len(planned.Dropped) != 0 && planned.Dropped[0].Reason == retro.DropPrecedent {
				t.Fatal("GatePrecedent changed its input")
			}
		})
	}
}

func TestEvidenceIsChecked(t *testing.T) {
	long := strings.Repeat("x", 301)
	out := retro.Output{Supersede: []retro.Supersede{{ID: retro.Ref{ID: 12}, Evidence: []string{long}}}}
	errs := retro.CheckEntries(out)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "supersede[0].evidence_task_ids[0]") {
		t.Fatalf("errs %v", errs)
	}
	nine := make([]string, 9)
	for i := range nine {
		nine[i] = "task-1"
	}
	if errs := retro.CheckEntries(retro.Output{Supersede: []retro.Supersede{{ID: retro.Ref{ID: 12}, Evidence: nine}}}); len(errs) != 1 ||
		!strings.Contains(errs[0].Error(), "9 ids, at most 8") {
		t.Fatalf("nine ids: %v", errs)
	}
}
