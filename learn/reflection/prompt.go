package reflection

import "unicode/utf8"

// Prompt is a reflection's material split for a model call of its own
// (the reflect_task job): System is the fixed part (the questions, the
// relations, the schema and the job's ending), which depends only on the
// options and so is byte-identical across tasks, for DeepSeek's prefix
// cache to serve; User is the task's own material (the task, its decision
// environment, its trajectory). Together they say what Material says.
type Prompt struct {
	System string
	User   string
}

// systemHead introduces the fixed part, which comes before the material.
const systemHead = "You reflect on a coding agent's closed task for mull, which stores what you conclude as structured lessons. " +
	"The next message is the REFLECTION MATERIAL: the task, its decision environment and its decision trajectory. " +
	"Read it against the instructions below.\n\n"

// JobPrompt is the job-mode material of a task, split (Prompt). The mode
// is always job, whatever opts says.
func JobPrompt(task TaskBrief, environment string, traj Trajectory, opts MaterialOptions) Prompt {
	return split(taskHead(task), environment, traj, task.ID, opts)
}

// TurnJobPrompt is TurnMaterial split for the job (Prompt); ok is false
// when the turn is not due (TurnDue).
func TurnJobPrompt(turn TurnBrief, environment string, traj Trajectory, opts MaterialOptions) (Prompt, bool) {
	if !TurnDue(turn, traj) {
		return Prompt{}, false
	}
	id := turn.ID
	if id == "" {
		id = TurnID(turn.SessionID, turn.Turn)
	}
	return split(turnHead(turn, id), environment, traj, id, opts), true
}

func split(head, environment string, traj Trajectory, id string, opts MaterialOptions) Prompt {
	opts.Mode = ModeJob
	system := systemHead + instructions(opts, oneLine(id, 200))
	return Prompt{System: system, User: body(head, environment, traj, MaxMaterialRunes-utf8.RuneCountInString(system))}
}
