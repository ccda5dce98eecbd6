package reflection_test

import (
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/reflection"
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
		a    reflection.TurnActivity
		o    reflection.NudgeOptions
		want bool
	}{
		{"7 calls", reflection.TurnActivity{ToolCalls: calls(7)}, reflection.NudgeOptions{}, false},
		{"8 calls", reflection.TurnActivity{ToolCalls: calls(8)}, reflection.NudgeOptions{}, true},
		{"9 calls", reflection.TurnActivity{ToolCalls: calls(9)}, reflection.NudgeOptions{}, true},
		{"7 calls + task tools", reflection.TurnActivity{ToolCalls: calls(7, "task_reflect", "lessons_lookup")}, reflection.NudgeOptions{}, false},
		{"one file changed", reflection.TurnActivity{ToolCalls: calls(1), FilesChanged: 1}, reflection.NudgeOptions{}, true},
		{"nothing", reflection.TurnActivity{}, reflection.NudgeOptions{}, false},
		{"task_start this turn", reflection.TurnActivity{ToolCalls: calls(20, "task_start")}, reflection.NudgeOptions{}, false},
		{"task_end this turn", reflection.TurnActivity{ToolCalls: calls(20, "task_end")}, reflection.NudgeOptions{}, false},
		{"boundary flag", reflection.TurnActivity{ToolCalls: calls(20), TaskBoundary: true}, reflection.NudgeOptions{}, false},
		{"task open", reflection.TurnActivity{ToolCalls: calls(20), FilesChanged: 2, TaskOpen: true}, reflection.NudgeOptions{}, false},
		{"1 served", reflection.TurnActivity{ToolCalls: calls(20), NudgesServed: 1}, reflection.NudgeOptions{}, true},
		{"2 served", reflection.TurnActivity{ToolCalls: calls(20), NudgesServed: 2}, reflection.NudgeOptions{}, false},
		{"3 served", reflection.TurnActivity{ToolCalls: calls(20), NudgesServed: 3}, reflection.NudgeOptions{}, false},
		{"min calls 3", reflection.TurnActivity{ToolCalls: calls(3)}, reflection.NudgeOptions{MinCalls: 3}, true},
		{"max 3, 2 served", reflection.TurnActivity{ToolCalls: calls(20), NudgesServed: 2}, reflection.NudgeOptions{MaxPerSession: 3}, true},
		// The seed's turn 63: the session opened tasks before, none is open,
		// 127 calls without task_start: the rule is per turn.
		{"seed turn 63", reflection.TurnActivity{ToolCalls: calls(127)}, reflection.NudgeOptions{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, ok := reflection.Nudge(c.a, c.o)
			if ok != c.want || (text != "") != c.want {
				t.Errorf("nudge = %v %q, want %v", ok, text, c.want)
			}
		})
	}
	if reflection.DefaultNudge.MinCalls != 8 || reflection.DefaultNudge.MaxPerSession != 2 {
		t.Errorf("defaults %+v, the seed's are 8 and 2", reflection.DefaultNudge)
	}
}

func TestNudgeText(t *testing.T) {
	text, _ := reflection.Nudge(reflection.TurnActivity{ToolCalls: calls(12, "lessons_lookup"), FilesChanged: 2}, reflection.NudgeOptions{})
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
	if one := reflection.NudgeText(reflection.TurnActivity{FilesChanged: 1}); !strings.Contains(one, "(1 file changed)") {
		t.Errorf("one file: %q", one)
	}
}

func TestTurnMaterial(t *testing.T) {
	turn := reflection.TurnBrief{SessionID: "session-1", Turn: 63}
	tr := trajectory()
	got, ok := reflection.TurnMaterial(turn, env, tr, reflection.MaterialOptions{Mode: reflection.ModeAgent, Silent: true})
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
	open, _ := reflection.TurnMaterial(turn, env, tr, reflection.MaterialOptions{Mode: reflection.ModeJob})
	if !strings.Contains(open, "Task task-9 is open: this turn belongs to its task window") || !strings.Contains(open, "Do not record the same lesson twice") {
		t.Errorf("open task note missing:\n%.900s", open)
	}
	if reflection.TurnID("s", 4) != "turn-s-4" {
		t.Error(reflection.TurnID("s", 4))
	}
}

func TestTurnSkipped(t *testing.T) {
	empty := reflection.BuildTrajectory([]reflection.Event{tool(1, "read", false), tool(2, "task_end", true), ev(3, "turn_end", nil)}, reflection.TrajectoryOptions{})
	if _, ok := reflection.TurnMaterial(reflection.TurnBrief{Turn: 1}, env, empty, reflection.MaterialOptions{}); ok {
		t.Error("an empty turn (no dialogue, reasoning or failure) gets a reflection")
	}
	only := func(e reflection.Event) reflection.Trajectory {
		return reflection.BuildTrajectory([]reflection.Event{e}, reflection.TrajectoryOptions{})
	}
	for name, tr := range map[string]reflection.Trajectory{
		"dialogue": only(user(1, "hi")), "reasoning": only(thought(1, "hmm")), "failure": only(tool(1, "bash", true)),
	} {
		if !reflection.TurnDue(reflection.TurnBrief{Turn: 1}, tr) {
			t.Errorf("a turn with only %s is skipped", name)
		}
	}
	if reflection.TurnDue(reflection.TurnBrief{Turn: 1, Covered: true}, trajectory()) {
		t.Error("a turn a task's reflection covers gets a fallback")
	}
}
