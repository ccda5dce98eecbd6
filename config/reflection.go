package config

import (
	"cmp"
	"slices"
)

// The reflection modes (reflection.mode): who reflects on a closed task.
const (
	// ReflectJob: mull's own reflect_task job, out of the agent's context.
	ReflectJob = "job"
	// ReflectAgent: task_end answers with the reflection material and the
	// agent calls task_reflect; no job runs.
	ReflectAgent = "agent"
	// ReflectBoth: the job and the material; whichever applies first
	// stands.
	ReflectBoth = "both"
)

// ReflectModes lists the modes.
var ReflectModes = []string{ReflectJob, ReflectAgent, ReflectBoth}

// Reflection configures task reflection (seed 000): who reflects on a
// closed task, the precedent gate, the adversarial review, the per-turn
// fallback and the missed-task nudge. The switches that default to on are
// *bool, so an unset one takes its default and false stays false; read them
// with the On methods, which treat nil as the default.
type Reflection struct {
	// Mode is job, agent or both. Defaults to "job".
	// Env: MULL_REFLECTION_MODE.
	Mode string `toml:"mode"`
	// PrecedentGate: a revise (and a retro's or consolidation's supersede
	// of a lesson) needs evidence_task_ids that pass the gate. Defaults to
	// true. Env: MULL_REFLECTION_PRECEDENT_GATE.
	PrecedentGate *bool `toml:"precedent_gate" env:"bool"`
	// PrecedentInPrompt renders "Precedent: verified Nx, M
	// counterexample(s)" under a lesson in the digest. Defaults to true.
	// Env: MULL_REFLECTION_PRECEDENT_IN_PROMPT.
	PrecedentInPrompt *bool `toml:"precedent_in_prompt" env:"bool"`
	// AdversarialReview: every new or revised lesson must carry a critique.
	// Defaults to false. Env: MULL_REFLECTION_ADVERSARIAL_REVIEW.
	AdversarialReview bool `toml:"adversarial_review"`
	// TurnFallback reflects once per substantive turn no task covered.
	// Defaults to false. Env: MULL_REFLECTION_TURN_FALLBACK.
	TurnFallback bool `toml:"turn_fallback"`
	// Silent: the agent's reflection material uses the seed's
	// silentReflection wording (reflect without narrating it to the user).
	// Defaults to true. Env: MULL_REFLECTION_SILENT.
	Silent *bool `toml:"silent" env:"bool"`
	// EnvironmentInBrief puts the task's DECISION ENVIRONMENT in the
	// reflection material. Defaults to true.
	// Env: MULL_REFLECTION_ENVIRONMENT_IN_BRIEF.
	EnvironmentInBrief *bool `toml:"environment_in_brief" env:"bool"`
	// Nudge is the seed's missedTaskNudge: a turn of substantive work that
	// no task covered gets a notice saying so. Defaults to true.
	// Env: MULL_REFLECTION_NUDGE.
	Nudge *bool `toml:"nudge" env:"bool"`
	// NudgeMinCalls is the tool calls (task tools not counted) that make a
	// turn substantive for the missed-task nudge. Defaults to 8.
	// Env: MULL_REFLECTION_NUDGE_MIN_CALLS.
	NudgeMinCalls int `toml:"nudge_min_calls"`
	// NudgeMaxPerSession caps the nudges of one session. Defaults to 2.
	// Env: MULL_REFLECTION_NUDGE_MAX_PER_SESSION.
	NudgeMaxPerSession int `toml:"nudge_max_per_session"`
}

// NudgeOn reports reflection.nudge (unset: on).
func (r Reflection) NudgeOn() bool { return on(r.Nudge) }

// GateOn reports reflection.precedent_gate (unset: on).
func (r Reflection) GateOn() bool { return on(r.PrecedentGate) }

// PrecedentInPromptOn reports reflection.precedent_in_prompt (unset: on).
func (r Reflection) PrecedentInPromptOn() bool { return on(r.PrecedentInPrompt) }

// SilentOn reports reflection.silent (unset: on).
func (r Reflection) SilentOn() bool { return on(r.Silent) }

// EnvironmentInBriefOn reports reflection.environment_in_brief (unset: on).
func (r Reflection) EnvironmentInBriefOn() bool { return on(r.EnvironmentInBrief) }

// ModeOrDefault is Mode, or job when unset.
func (r Reflection) ModeOrDefault() string { return cmp.Or(r.Mode, ReflectJob) }

func on(p *bool) bool { return p == nil || *p }

func (r Reflection) withDefaults() Reflection {
	r.Mode = cmp.Or(r.Mode, ReflectJob)
	for _, p := range []**bool{&r.PrecedentGate, &r.PrecedentInPrompt, &r.Silent, &r.EnvironmentInBrief, &r.Nudge} {
		if *p == nil {
			*p = boolPtr(true)
		}
	}
	r.NudgeMinCalls = cmp.Or(r.NudgeMinCalls, 8)
	r.NudgeMaxPerSession = cmp.Or(r.NudgeMaxPerSession, 2)
	return r
}

func (r Reflection) validate() error {
	if !slices.Contains(ReflectModes, r.Mode) {
		return bad("reflection.mode", "%q is not one of job, agent, both", r.Mode)
	}
	if r.NudgeMinCalls < 1 || r.NudgeMinCalls > 1000 {
		return bad("reflection.nudge_min_calls", "must be between 1 and 1000, got %d", r.NudgeMinCalls)
	}
	if r.NudgeMaxPerSession < 1 || r.NudgeMaxPerSession > 100 {
		return bad("reflection.nudge_max_per_session", "must be between 1 and 100, got %d", r.NudgeMaxPerSession)
	}
	return nil
}
