package harness

import "time"

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

// ParseReview parses the review answer strictly (the first { through the
// last } is taken as JSON, as in the seed; unknown fields, wrong types and
// a missing field are errors naming the JSON path).
func ParseReview(raw []byte) (Review, error) { return Review{}, nil }

// ParseProposal parses the planner answer strictly, like ParseReview.
// Edits are not validated here (Apply's rule 1 records them as rejected).
func ParseProposal(raw []byte) (Proposal, error) { return Proposal{}, nil }

// Route is how the trajectory was laid out.
type Route string

// The routes: A, the verbatim tail of the session's turns (when the
// session showed cache reads, so its own prefix is warm); B, a summary: a
// verbatim signal layer (failures, errors, feedback) of SignalRatio of the
// budget and a one-line-per-turn summary of the rest.
const (
	RouteVerbatim Route = "verbatim"
	RouteSummary  Route = "summary"
)

// Turn is one event of the session, as the trajectory reads it.
type Turn struct {
	At time.Time
	// Type: user_message, assistant_message, tool_result, error, feedback,
	// turn_end, compaction_end.
	Type string
	Text string
	// Failed marks a failed tool result (and errors): signal.
	Failed bool
}

// TrajectoryInput is the session's events and the budget.
type TrajectoryInput struct {
	Turns       []Turn
	MaxChars    int
	SignalRatio float64
	// CacheReads is the session's prompt_cache_hit_tokens so far (its
	// usage events): > 0 picks route A.
	CacheReads int64
}

// Trajectory lays the session out for the model, tail-biased, within
// MaxChars.
func Trajectory(in TrajectoryInput) (text string, route Route) { return "", RouteSummary }

