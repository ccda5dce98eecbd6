package harness

// Slice B replaces this file (prompt.go, parse.go, trajectory.go,
// project.go, skill.go, wrapup.go, trigger.go): the signatures below are
// the contract.

// Prompt is one LLM call's messages, laid out for DeepSeek's prefix cache:
// System is fixed and byte-identical for the review and the planner call,
// Material (the state overview, the history and the trajectory) is the
// same for both calls of one job, and Ask, last, is the call's own.
type Prompt struct {
	System   string
	Material string
	Ask      string
}

// MaterialInput is what the model reads about the harness and the session.
type MaterialInput struct {
	Trigger    Trigger
	State      State
	History    []Refinement
	Trajectory string
}

// ReviewPrompt is the review call: it answers {"approved","rationale"}.
func ReviewPrompt(in MaterialInput) Prompt { return Prompt{} }

// PlanPrompt is the planner call: it answers {"id","summary","edits"}.
// review is the review's verdict (automatic path; nil for a manual
// refine); instruction is the person's or the agent's, if any.
func PlanPrompt(in MaterialInput, scope Scope, review *Review, instruction string) Prompt {
	return Prompt{}
}

