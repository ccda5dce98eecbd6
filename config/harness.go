package config

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Harness configures harness refinement (seed 004): versioned harness
// entries (prompt notes, memories, skills, subagent specs) the
// refine_review job edits under the seed's governance.
type Harness struct {
	// Enabled turns the automatic review off when false (refinement by
	// hand, the projection and the skills stay). Defaults to true.
	// Env: MULL_HARNESS_ENABLED.
	Enabled *bool `toml:"enabled" env:"bool"`
	// TurnInterval: a review is due after this many turn_end events of a
	// session since its last review attempt finished. Defaults to 25.
	TurnInterval int `toml:"turn_interval"`
	// Compact: a compaction_end event makes a review due. Defaults to true.
	Compact *bool `toml:"compact" env:"bool"`
	// Cooldown is how long after a review attempt started no new one
	// starts (a session end drains a due one anyway). Defaults to 20m.
	Cooldown Duration `toml:"cooldown"`
	// MaxTrajectoryChars caps the trajectory the review and the planner
	// read. Defaults to 12000.
	MaxTrajectoryChars int `toml:"max_trajectory_chars"`
	// TrajectorySignalRatio is the share of that cap kept verbatim (the
	// signal layer: failures, errors, feedback) when the trajectory is a
	// summary (route B). Defaults to 0.5.
	TrajectorySignalRatio float64 `toml:"trajectory_signal_ratio"`
	// PlannerMaxTokens caps each review and planner answer. Defaults to
	// 4000.
	PlannerMaxTokens int `toml:"planner_max_tokens"`
	// MaxEntryGrowth: an update growing an entry's content by more than
	// this fraction is rejected (exactly at it is allowed; an empty entry
	// skips the check; 0 disables). Defaults to 0.5.
	MaxEntryGrowth *float64 `toml:"max_entry_growth" env:"number"`
	// MaxEntryShrink: an update shrinking an entry's content by more than
	// this fraction is rejected (0 disables). Defaults to 0.5.
	MaxEntryShrink *float64 `toml:"max_entry_shrink" env:"number"`
	// ProtectedKinds are kinds the automatic path may not update or
	// delete. Defaults to ["skill"].
	ProtectedKinds []string `toml:"protected_kinds" env:"list"`
	// MaxInjectedPerKind caps the entries of each kind the projection
	// shows. Defaults to 6.
	MaxInjectedPerKind int `toml:"max_injected_per_kind"`
	// RequireGlobalApproval: a refinement of the global store waits as a
	// proposal until a person accepts it. Defaults to false.
	// Env: MULL_HARNESS_REQUIRE_GLOBAL_APPROVAL.
	RequireGlobalApproval bool `toml:"require_global_approval"`
	// PlaybookSkills serves the retros' playbooks as DSH skills too.
	// Defaults to true.
	PlaybookSkills *bool `toml:"playbook_skills" env:"bool"`
}

// The harness kinds (harness.protected_kinds takes these).
var HarnessKinds = []string{"prompt", "memory", "skill", "subagent"}

// On reports harness.enabled (default true).
func (h Harness) On() bool { return h.Enabled == nil || *h.Enabled }

// CompactOn reports harness.compact (default true).
func (h Harness) CompactOn() bool { return h.Compact == nil || *h.Compact }

// PlaybookSkillsOn reports harness.playbook_skills (default true).
func (h Harness) PlaybookSkillsOn() bool { return h.PlaybookSkills == nil || *h.PlaybookSkills }

// Growth is harness.max_entry_growth (default 0.5; 0 disables).
func (h Harness) Growth() float64 {
	if h.MaxEntryGrowth == nil {
		return 0.5
	}
	return *h.MaxEntryGrowth
}

// Shrink is harness.max_entry_shrink (default 0.5; 0 disables).
func (h Harness) Shrink() float64 {
	if h.MaxEntryShrink == nil {
		return 0.5
	}
	return *h.MaxEntryShrink
}

func (h Harness) withDefaults() Harness {
	on := func(b *bool) *bool {
		if b == nil {
			t := true
			return &t
		}
		return b
	}
	h.Enabled, h.Compact, h.PlaybookSkills = on(h.Enabled), on(h.Compact), on(h.PlaybookSkills)
	h.TurnInterval = cmp.Or(h.TurnInterval, 25)
	h.Cooldown = cmp.Or(h.Cooldown, Duration(20*time.Minute))
	h.MaxTrajectoryChars = cmp.Or(h.MaxTrajectoryChars, 12000)
	h.TrajectorySignalRatio = cmp.Or(h.TrajectorySignalRatio, 0.5)
	h.PlannerMaxTokens = cmp.Or(h.PlannerMaxTokens, 4000)
	if h.MaxEntryGrowth == nil {
		v := 0.5
		h.MaxEntryGrowth = &v
	}
	if h.MaxEntryShrink == nil {
		v := 0.5
		h.MaxEntryShrink = &v
	}
	if h.ProtectedKinds == nil {
		h.ProtectedKinds = []string{"skill"}
	}
	h.MaxInjectedPerKind = cmp.Or(h.MaxInjectedPerKind, 6)
	return h
}

func (h Harness) validate() error {
	if h.TurnInterval < 1 {
		return bad("harness.turn_interval", "must be at least 1, got %d", h.TurnInterval)
	}
	if h.Cooldown.D() < 0 {
		return bad("harness.cooldown", "must be 0 or more, got %s", h.Cooldown.D())
	}
	if h.MaxTrajectoryChars < 1000 || h.MaxTrajectoryChars > 200000 {
		return bad("harness.max_trajectory_chars", "must be between 1000 and 200000, got %d", h.MaxTrajectoryChars)
	}
	if r := h.TrajectorySignalRatio; r <= 0 || r > 1 {
		return bad("harness.trajectory_signal_ratio", "must be more than 0 and at most 1, got %g", r)
	}
	if h.PlannerMaxTokens < 256 {
		return bad("harness.planner_max_tokens", "must be at least 256, got %d", h.PlannerMaxTokens)
	}
	if g := h.Growth(); g < 0 {
		return bad("harness.max_entry_growth", "must be 0 (off) or more, got %g", g)
	}
	if s := h.Shrink(); s < 0 || s >= 1 {
		return bad("harness.max_entry_shrink", "must be 0 (off) or more and less than 1, got %g", s)
	}
	for _, k := range h.ProtectedKinds {
		if !slices.Contains(HarnessKinds, k) {
			return bad("harness.protected_kinds", "%q is not one of %s", k, fmt.Sprint(HarnessKinds))
		}
	}
	if h.MaxInjectedPerKind < 1 {
		return bad("harness.max_injected_per_kind", "must be at least 1, got %d", h.MaxInjectedPerKind)
	}
	return nil
}
