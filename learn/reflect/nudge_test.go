package reflect_test

import (
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/reflect"
)

func calls(n int, extra ...string) []string {
	out := make([]string, 0, n+len(extra))
	for range n {
		out = append(out, "bash")
	}
	return append(out, extra...)
}

func TestNudge(t *testing.T) {
	cases := []struct {
		name string
		a    reflect.TurnActivity
		o    reflect.NudgeOptions
		want bool
	}{
		{"7 calls", reflect.TurnActivity{ToolCalls: calls(7)}, reflect.NudgeOptions{}, false},
		{"8 calls", reflect.TurnActivity{ToolCalls: calls(8)}, reflect.NudgeOptions{}, true},
		{"9 calls", reflect.TurnActivity{ToolCalls: calls(9)}, reflect.NudgeOptions{}, true},
		{"7 calls + task tools", reflect.TurnActivity{ToolCalls: calls(7, "task_reflect", "lessons_lookup")}, reflect.NudgeOptions{}, false},
		{"one file changed", reflect.TurnActivity{ToolCalls: calls(1), FilesChanged: 1}, reflect.NudgeOptions{}, true},
		{"nothing", reflect.TurnActivity{}, reflect.NudgeOptions{}, false},
		{"task_start this turn", reflect.TurnActivity{ToolCalls: calls(20, "task_start")}, reflect.NudgeOptions{}, false},
		{"task_end this turn", reflect.TurnActivity{ToolCalls: calls(20, "task_end")}, reflect.NudgeOptions{}, false},
		{"boundary flag", reflect.TurnActivity{ToolCalls: calls(20), TaskBoundary: true}, reflect.NudgeOptions{}, false},
		{"task open", reflect.TurnActivity{ToolCalls: calls(20), FilesChanged: 2, TaskOpen: true}, reflect.NudgeOptions{}, false},
		{"1 served", reflect.TurnActivity{ToolCalls: calls(20), NudgesServed: 1}, reflect.NudgeOptions{}, true},
		{"2 served", reflect.TurnActivity{ToolCalls: calls(20), NudgesServed: 2}, reflect.NudgeOptions{}, false},
		{"3 served", reflect.TurnActivity{ToolCalls: calls(20), NudgesServed: 3}, reflect.NudgeOptions{}, false},
		{"min calls 3", reflect.TurnActivity{ToolCalls: calls(3)}, reflect.NudgeOptions{MinCalls: 3}, true},
		{"max 3, 2 served", reflect.TurnActivity{ToolCalls: calls(20), NudgesServed: 2}, reflect.NudgeOptions{MaxPerSession: 3}, true},
		// The seed's turn 63: the session opened tasks before, none is open,
		// 127 calls without task_start: the rule is per turn.
		{"seed turn 63", reflect.TurnActivity{ToolCalls: calls(127)}, reflect.NudgeOptions{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, ok := reflect.Nudge(c.a, c.o)
			if ok != c.want || (text != "") != c.want {
				t.Errorf("nudge = %v %q, want %v", ok, text, c.want)
			}
		})
	}
	if reflect.DefaultNudge.MinCalls != 8 || reflect.DefaultNudge.MaxPerSession != 2 {
		t.Errorf("defaults %+v, the seed's are 8 and 2", reflect.DefaultNudge)
	}
}

func TestNudgeText(t *testing.T) {
	text, _ := reflect.Nudge(reflect.TurnActivity{ToolCalls: calls(12, "lessons_lookup"), FilesChanged: 2}, reflect.NudgeOptions{})
	for _, want := range []string{
		"This turn did substantive work (12 tool calls, 2 files changed)",
		"If this work fits a task, its decisions are not being recorded now.",
		"Not opening a task is your choice; make sure it was a judgement, not an oversight.",
		"This is not a request to open a task after the fact",
		"task_start as its first action",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("nudge %q lacks %q", text, want)
		}
	}
	// A statement, not a command.
	low := strings.ToLower(text)
	for _, bad := range []string{"please", "you must", "open a task now", "call task_start now", "call task_start", "!"} {
		if strings.Contains(low, bad) {
			t.Errorf("nudge says %q: %s", bad, text)
		}
	}
	if one := reflect.NudgeText(reflect.TurnActivity{FilesChanged: 1}); !strings.Contains(one, "(1 file changed)") {
		t.Errorf("one file: %q", one)
	}
}

func TestTurnMaterial(t *testing.T) {
	turn := reflect.TurnBrief{SessionID: "session-1", Turn: 63}
	tr := trajectory()
	got, ok := reflect.TurnMaterial(turn, env, tr, reflect.MaterialOptions{Mode: reflect.ModeAgent, Silent: true})
	if !ok {
		t.Fatal("a turn with dialogue and a failure is not due")
	}
	for _, want := range []string{
		"a turn boundary is not a decision boundary",
		"per-turn fallback reflection, not the main one",
		"Call task_reflect directly, with turn-session-1-63 as the task_id.",
		"- #9743 USER", env, "QUESTIONS",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("turn material lacks %q", want)
		}
	}
	if strings.Contains(got, "task window") {
		t.Error("no task is open, yet the material speaks of its window")
	}
	turn.OpenTaskID = "task-9"
	open, _ := reflect.TurnMaterial(turn, env, tr, reflect.MaterialOptions{Mode: reflect.ModeJob})
	if !strings.Contains(open, "Task task-9 is open: this turn belongs to its task window") || !strings.Contains(open, "Do not record the same lesson twice") {
		t.Errorf("open task note missing:\n%.900s", open)
	}
	if reflect.TurnID("s", 4) != "turn-s-4" {
		t.Error(reflect.TurnID("s", 4))
	}
}

func TestTurnSkipped(t *testing.T) {
	empty := reflect.BuildTrajectory([]reflect.Event{tool(1, "read", false), tool(2, "task_end", true), ev(3, "turn_end", nil)}, reflect.TrajectoryOptions{})
	if _, ok := reflect.TurnMaterial(reflect.TurnBrief{Turn: 1}, env, empty, reflect.MaterialOptions{}); ok {
		t.Error("an empty turn (no dialogue, reasoning or failure) gets a reflection")
	}
	only := func(e reflect.Event) reflect.Trajectory {
		return reflect.BuildTrajectory([]reflect.Event{e}, reflect.TrajectoryOptions{})
	}
	for name, tr := range map[string]reflect.Trajectory{
		"dialogue": only(user(1, "hi")), "reasoning": only(thought(1, "hmm")), "failure": only(tool(1, "bash", true)),
	} {
		if !reflect.TurnDue(reflect.TurnBrief{Turn: 1}, tr) {
			t.Errorf("a turn with only %s is skipped", name)
		}
	}
	if reflect.TurnDue(reflect.TurnBrief{Turn: 1, Covered: true}, trajectory()) {
		t.Error("a turn a task's reflection covers gets a fallback")
	}
}
