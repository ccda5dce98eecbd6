package config_test

import (
	"errors"
	"testing"

	"github.com/mullhq/mull/config"
)

// The reflection switches that default to on stay on unless set, and false
// set by file, environment or flag stays false.
func TestReflectionDefaultsAndSwitches(t *testing.T) {
	d := config.Default().Reflection
	if d.Mode != "job" || !d.GateOn() || !d.PrecedentInPromptOn() || !d.SilentOn() || !d.EnvironmentInBriefOn() ||
		d.AdversarialReview || d.TurnFallback || d.NudgeMinCalls != 8 || d.NudgeMaxPerSession != 2 {
		t.Fatalf("defaults: %+v", d)
	}
	if z := (config.Reflection{}); !z.GateOn() || !z.SilentOn() || z.ModeOrDefault() != "job" {
		t.Fatal("an unset Reflection must read as the defaults")
	}
	file := write(t, "[reflection]\nmode = \"agent\"\nprecedent_gate = false\nsilent = false\nadversarial_review = true\n")
	c, err := config.Load(config.Source{File: file, Environ: []string{"MULL_REFLECTION_ENVIRONMENT_IN_BRIEF=false", "MULL_REFLECTION_NUDGE_MIN_CALLS=12"},
		Flags: map[string]string{"reflection.precedent_in_prompt": "false"}})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Reflection
	if r.Mode != "agent" || r.GateOn() || r.SilentOn() || r.EnvironmentInBriefOn() || r.PrecedentInPromptOn() ||
		!r.AdversarialReview || r.NudgeMinCalls != 12 {
		t.Fatalf("set: %+v", r)
	}
}

// A bad reflection value is refused at start, naming its key.
func TestReflectionRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		env []string
		key string
	}{
		{[]string{"MULL_REFLECTION_MODE=auto"}, "reflection.mode"},
		{[]string{"MULL_REFLECTION_NUDGE_MIN_CALLS=0x"}, "MULL_REFLECTION_NUDGE_MIN_CALLS"},
		{[]string{"MULL_REFLECTION_NUDGE_MIN_CALLS=1001"}, "reflection.nudge_min_calls"},
		{[]string{"MULL_REFLECTION_NUDGE_MAX_PER_SESSION=-1"}, "reflection.nudge_max_per_session"},
		{[]string{"MULL_REFLECTION_SILENT=maybe"}, "MULL_REFLECTION_SILENT"},
	} {
		_, err := config.Load(config.Source{Environ: tc.env})
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%v: got %v, want an error naming %s", tc.env, err, tc.key)
		}
	}
}
