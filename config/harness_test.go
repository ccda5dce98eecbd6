package config_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
)

// TestHarnessDefaultsAreTheSeeds pins [harness]'s defaults to seed 004's
// numbers (jasen215/dsh-continual-harness: DEFAULT_TURN_INTERVAL 25,
// DEFAULT_COOLDOWN_MS 20 min, maxTrajectoryChars 12000,
// trajectorySignalRatio 0.5, maxEntryGrowth 0.5, protectedKinds [skill],
// maxInjectedEntriesPerKind 6, requireGlobalApproval false), written out
// here rather than read from the code, so a changed default fails.
func TestHarnessDefaultsAreTheSeeds(t *testing.T) {
	h := config.Default().Harness
	if !h.On() || !h.CompactOn() || !h.PlaybookSkillsOn() || h.TurnInterval != 25 || h.Cooldown.D() != 20*time.Minute ||
		h.MaxTrajectoryChars != 12000 || h.TrajectorySignalRatio != 0.5 || h.Growth() != 0.5 || h.Shrink() != 0.5 ||
		!slices.Equal(h.ProtectedKinds, []string{"skill"}) || h.MaxInjectedPerKind != 6 || h.RequireGlobalApproval ||
		h.PlannerMaxTokens != 4000 {
		t.Fatalf("defaults: %+v", h)
	}
	// Unset pointers read as the defaults too (a Harness built in code).
	if z := (config.Harness{}); !z.On() || !z.CompactOn() || z.Growth() != 0.5 || z.Shrink() != 0.5 {
		t.Fatalf("zero Harness: on %v compact %v growth %v shrink %v", z.On(), z.CompactOn(), z.Growth(), z.Shrink())
	}
	c, err := config.Load(config.Source{Environ: []string{"MULL_HARNESS_ENABLED=false", "MULL_HARNESS_TURN_INTERVAL=10",
		"MULL_HARNESS_COOLDOWN=5m", "MULL_HARNESS_MAX_ENTRY_GROWTH=0", "MULL_HARNESS_PROTECTED_KINDS=skill,subagent",
		"MULL_HARNESS_REQUIRE_GLOBAL_APPROVAL=true"}})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Harness
	if s.On() || s.TurnInterval != 10 || s.Cooldown.D() != 5*time.Minute || s.Growth() != 0 ||
		!slices.Equal(s.ProtectedKinds, []string{"skill", "subagent"}) || !s.RequireGlobalApproval {
		t.Fatalf("set: %+v", s)
	}
}

func TestHarnessRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		env []string
		key string
	}{
		{[]string{"MULL_HARNESS_TURN_INTERVAL=-1"}, "harness.turn_interval"},
		{[]string{"MULL_HARNESS_COOLDOWN=-1s"}, "harness.cooldown"},
		{[]string{"MULL_HARNESS_MAX_TRAJECTORY_CHARS=999"}, "harness.max_trajectory_chars"},
		{[]string{"MULL_HARNESS_TRAJECTORY_SIGNAL_RATIO=1.5"}, "harness.trajectory_signal_ratio"},
		{[]string{"MULL_HARNESS_PLANNER_MAX_TOKENS=100"}, "harness.planner_max_tokens"},
		{[]string{"MULL_HARNESS_MAX_ENTRY_GROWTH=-0.1"}, "harness.max_entry_growth"},
		{[]string{"MULL_HARNESS_MAX_ENTRY_SHRINK=1"}, "harness.max_entry_shrink"},
		{[]string{"MULL_HARNESS_PROTECTED_KINDS=skill,tool"}, "harness.protected_kinds"},
		{[]string{"MULL_HARNESS_MAX_INJECTED_PER_KIND=-2"}, "harness.max_injected_per_kind"},
	} {
		_, err := config.Load(config.Source{Environ: tc.env})
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%v: got %v, want an error naming %s", tc.env, err, tc.key)
		}
	}
}
