package reflection_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/reflection"
)

// TestJobPrompt: the job's prompt puts the fixed instructions in a system
// message that is byte-identical across tasks (DeepSeek's prefix cache
// serves it) and differs only by the options; the task's own material is
// the user message; the two together say what Material says.
func TestJobPrompt(t *testing.T) {
	opts := reflection.MaterialOptions{Mode: reflection.ModeAgent, Silent: true} // the job's prompt is job mode whatever it is given
	p := reflection.JobPrompt(brief, env, trajectory(), opts)
	other := brief
	other.ID, other.Goal, other.Status = "task-9b1c", "rename the flag", "succeeded"
	q := reflection.JobPrompt(other, "", reflection.Trajectory{}, opts)
	if p.System != q.System {
		t.Fatalf("system part differs between two tasks:\n%s\n---\n%s", p.System, q.System)
	}
	for _, part := range []string{p.System, p.User} {
		if strings.Contains(part, "task_reflect") {
			t.Errorf("the job's prompt mentions the agent's tool task_reflect:\n%s", part)
		}
	}
	if strings.Contains(p.System, "task-0f3a") || strings.Contains(p.System, "fix the pager") {
		t.Errorf("system part holds the task's own text:\n%s", p.System)
	}
	if !strings.Contains(p.System, "json") || !strings.Contains(p.System, "QUESTIONS\n1. ") || !strings.Contains(p.System, "RELATIONS\n") {
		t.Errorf("system part lacks the questions, the relations or the word json (JSON mode needs it):\n%s", p.System)
	}
	whole := reflection.Material(brief, env, trajectory(), reflection.MaterialOptions{Mode: reflection.ModeJob})
	if !strings.HasPrefix(whole, p.User) || !strings.HasSuffix(p.System, whole[len(p.User):]) {
		t.Errorf("system + user do not say what Material says:\nmaterial:\n%s\nsystem:\n%s\nuser:\n%s", whole, p.System, p.User)
	}
	adv := reflection.JobPrompt(brief, env, trajectory(), reflection.MaterialOptions{Adversarial: true})
	if adv.System == p.System || !strings.Contains(adv.System, `"steelman_rounds"`) || adv.User != p.User {
		t.Errorf("adversarial review should change the system part only")
	}
	if n := utf8.RuneCountInString(p.System + p.User); n > reflection.MaxMaterialRunes {
		t.Errorf("prompt is %d runes, cap %d", n, reflection.MaxMaterialRunes)
	}
}

// TestTurnJobPrompt: a turn's prompt shares the task prompt's system part
// and is not made for an empty or covered turn.
func TestTurnJobPrompt(t *testing.T) {
	turn := reflection.TurnBrief{SessionID: "session-1", Turn: 7, OpenTaskID: "task-0f3a"}
	p, ok := reflection.TurnJobPrompt(turn, env, trajectory(), reflection.MaterialOptions{})
	if !ok || p.System != reflection.JobPrompt(brief, env, trajectory(), reflection.MaterialOptions{}).System {
		t.Fatalf("turn prompt %v; want the task prompt's system part", ok)
	}
	for _, want := range []string{"turn-session-1-7", "a turn boundary is not a decision boundary", "Task task-0f3a is open"} {
		if !strings.Contains(p.User, want) {
			t.Errorf("turn material lacks %q:\n%s", want, p.User)
		}
	}
	if _, ok := reflection.TurnJobPrompt(turn, env, reflection.Trajectory{}, reflection.MaterialOptions{}); ok {
		t.Error("an empty turn got a prompt")
	}
	turn.Covered = true
	if _, ok := reflection.TurnJobPrompt(turn, env, trajectory(), reflection.MaterialOptions{}); ok {
		t.Error("a covered turn got a prompt")
	}
}
