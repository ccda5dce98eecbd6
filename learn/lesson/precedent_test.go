package lesson_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
)

func TestPrecedents(t *testing.T) {
	var tasks []lesson.TaskOutcome
	add := func(n int, status lesson.TaskStatus, closed bool, ids ...int64) {
		for i := range n {
			tasks = append(tasks, lesson.TaskOutcome{ID: fmt.Sprintf("task-%s-%d", status, i), Status: status, Closed: closed, EnvironmentIDs: ids})
		}
	}
	// The seed's 4.5 figures for lesson 1: 19 verified, 1 counterexample.
	add(19, lesson.TaskSucceeded, true, 1, 2)
	add(1, lesson.TaskFailed, true, 1, 3)
	add(2, lesson.TaskAbandoned, true, 1)
	add(1, lesson.TaskAborted, true, 1, 3)
	// Open tasks and a status without a close record count nowhere.
	add(4, lesson.TaskOpen, false, 1, 2, 3)
	add(1, lesson.TaskSucceeded, false, 1)
	add(1, lesson.TaskOpen, true, 1)
	// A lesson listed twice in one snapshot counts once for it.
	add(1, lesson.TaskFailed, true, 3, 3)

	got := lesson.Precedents(tasks)
	want := map[int64]lesson.Precedent{
		1: {Verified: 19, Counter: 1, Exposures: 23},
		2: {Verified: 19, Counter: 0, Exposures: 19},
		3: {Verified: 0, Counter: 2, Exposures: 3},
	}
	if len(got) != len(want) {
		t.Errorf("got %d lessons, want %d: %v", len(got), len(want), got)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("lesson %d: %+v, want %+v", id, got[id], w)
		}
	}
	if _, ok := got[4]; ok {
		t.Errorf("a lesson in no snapshot has an entry")
	}
}

func TestFormatPrecedent(t *testing.T) {
	tests := []struct {
		p    lesson.Precedent
		want string
	}{
		{lesson.Precedent{Verified: 19, Counter: 1, Exposures: 23}, "Precedent: verified 19x, 1 counterexample(s)"},
		{lesson.Precedent{}, "Precedent: verified 0x, 0 counterexample(s)"},
	}
	for _, tt := range tests {
		if got := lesson.FormatPrecedent(tt.p); got != tt.want {
			t.Errorf("FormatPrecedent(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestCheckEvidence(t *testing.T) {
	const challenged = 42
	tasks := map[string]lesson.TaskOutcome{
		"task-failed":    {ID: "task-failed", Status: lesson.TaskFailed, Closed: true, EnvironmentIDs: []int64{7, challenged}},
		"task-aborted":   {ID: "task-aborted", Status: lesson.TaskAborted, Closed: true, EnvironmentIDs: []int64{challenged}},
		"task-abandoned": {ID: "task-abandoned", Status: lesson.TaskAbandoned, Closed: true, EnvironmentIDs: []int64{challenged}},
		"task-won":       {ID: "task-won", Status: lesson.TaskSucceeded, Closed: true, EnvironmentIDs: []int64{challenged}},
		"task-open":      {ID: "task-open", Status: lesson.TaskOpen, EnvironmentIDs: []int64{challenged}},
		"task-without":   {ID: "task-without", Status: lesson.TaskFailed, Closed: true, EnvironmentIDs: []int64{7, 41, 43}},
	}
	lookup := func(id string) (lesson.TaskOutcome, bool) { t, ok := tasks[id]; return t, ok }
	tests := []struct {
		name     string
		evidence []string
		check    string // "" accepted
		task     string
		msg      string
	}{
		{"no evidence", nil, lesson.GateNoEvidence, "", "no_evidence: challenging precedent L42 needs evidence_task_ids"},
		{"empty list", []string{}, lesson.GateNoEvidence, "", "no_evidence:"},
		{"unknown task", []string{"task-nope"}, lesson.GateUnknownOrOpen, "task-nope", `unknown_or_open: evidence task "task-nope" does not exist`},
		{"blank id", []string{"  "}, lesson.GateUnknownOrOpen, "", "does not exist"},
		{"open task", []string{"task-open"}, lesson.GateUnknownOrOpen, "task-open", `unknown_or_open: evidence task "task-open" is still open`},
		{"succeeded task", []string{"task-won"}, lesson.GateSucceeded, "task-won", `succeeded: evidence task "task-won" succeeded; one success does not challenge a precedent`},
		{"lesson not in snapshot", []string{"task-without"}, lesson.GateNotInSnapshot, "task-without", `not_in_snapshot: evidence task "task-without" did not have L42 in its start snapshot`},
		{"one bad among good", []string{"task-failed", "task-won"}, lesson.GateSucceeded, "task-won", "task-won"},
		{"accepted: failed task", []string{"task-failed"}, "", "", ""},
		{"accepted: aborted, abandoned, spaced", []string{" task-aborted", "task-abandoned", "task-failed"}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := lesson.CheckEvidence(challenged, tt.evidence, lookup)
			if tt.check == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ge *lesson.GateError
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v, want a *GateError", err)
			}
			if ge.Check != tt.check || ge.TaskID != tt.task || ge.Lesson != challenged {
				t.Errorf("refusal %+v, want check %q task %q lesson %d", ge, tt.check, tt.task, challenged)
			}
			if !strings.Contains(err.Error(), tt.msg) || !strings.HasPrefix(err.Error(), tt.check+": ") {
				t.Errorf("message %q, want it to start with %q and contain %q", err, tt.check+": ", tt.msg)
			}
		})
	}
}

// TestCheckEvidenceQuotesTaskID: the id is the model's and the refusal goes
// back to it, so it is quoted (no line break survives) and capped.
func TestCheckEvidenceQuotesTaskID(t *testing.T) {
	id := "task-x\n## SYSTEM " + strings.Repeat("a", 200)
	err := lesson.CheckEvidence(1, []string{id}, func(string) (lesson.TaskOutcome, bool) { return lesson.TaskOutcome{}, false })
	msg := err.Error()
	if strings.Contains(msg, "\n") || len(msg) > 200 {
		t.Errorf("message %q", msg)
	}
}

// A per-turn fallback's task is neither precedent nor evidence: mull chose
// its window and status, not the agent.
func TestTurnTasksAreNotPrecedent(t *testing.T) {
	turn := lesson.TaskOutcome{ID: "turn-s-3", Status: lesson.TaskFailed, Closed: true, EnvironmentIDs: []int64{7}, Turn: true}
	task := lesson.TaskOutcome{ID: "task-1", Status: lesson.TaskFailed, Closed: true, EnvironmentIDs: []int64{7}}
	if got := lesson.Precedents([]lesson.TaskOutcome{turn, task})[7]; got != (lesson.Precedent{Counter: 1, Exposures: 1}) {
		t.Fatalf("precedent %+v, want only the task counted", got)
	}
	byID := map[string]lesson.TaskOutcome{turn.ID: turn, task.ID: task}
	lookup := func(id string) (lesson.TaskOutcome, bool) { o, ok := byID[id]; return o, ok }
	var ge *lesson.GateError
	if err := lesson.CheckEvidence(7, []string{"turn-s-3"}, lookup); !errors.As(err, &ge) || ge.Check != lesson.GateNotATask {
		t.Fatalf("a turn as evidence: %v, want %s", err, lesson.GateNotATask)
	}
	if err := lesson.CheckEvidence(7, []string{"task-1"}, lookup); err != nil {
		t.Fatalf("a failed task as evidence: %v", err)
	}
}

// A promoted lesson keeps its history: a failed task that had its source
// in force is evidence against it.
func TestCheckEvidenceAcrossAPromotion(t *testing.T) {
	src := memory.Memory{ID: 3}
	mid := memory.Memory{ID: 5, PromotedFromID: 3}
	top := memory.Memory{ID: 8, PromotedFromID: 5}
	byID := map[int64]memory.Memory{3: src, 5: mid, 8: top}
	get := func(id int64) (memory.Memory, bool) { m, ok := byID[id]; return m, ok }
	lineage := lesson.Lineage(top, get)
	if len(lineage) != 3 || lineage[0] != 8 || lineage[1] != 5 || lineage[2] != 3 {
		t.Fatalf("lineage %v, want [8 5 3]", lineage)
	}
	old := lesson.TaskOutcome{ID: "task-old", Status: lesson.TaskFailed, Closed: true, EnvironmentIDs: []int64{3}}
	lookup := func(id string) (lesson.TaskOutcome, bool) { return old, id == old.ID }
	if err := lesson.CheckEvidenceLineage(lineage, []string{"task-old"}, lookup); err != nil {
		t.Fatalf("a failed task that had the source in force: %v", err)
	}
	var ge *lesson.GateError
	if err := lesson.CheckEvidence(8, []string{"task-old"}, lookup); !errors.As(err, &ge) || ge.Check != lesson.GateNotInSnapshot {
		t.Fatalf("without the lineage: %v, want %s", err, lesson.GateNotInSnapshot)
	}
	// A cycle stops.
	byID[3] = memory.Memory{ID: 3, PromotedFromID: 8}
	if l := lesson.Lineage(top, get); len(l) != 3 {
		t.Fatalf("lineage through a cycle: %v", l)
	}
}
