package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
)

// TestRetroExcerptDefaultsAreTheSeeds pins what a retro reads by default
// to the seed's numbers: 15 errors, 8 failed tool calls, every thumbs-down
// (0), 12 transcript entries, 3,500 characters, 300 per item. These, not
// learn/retro's own defaults, are what the jobs get.
func TestRetroExcerptDefaultsAreTheSeeds(t *testing.T) {
	c, err := config.Load(config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	want := config.Excerpt{Errors: 15, ToolFailures: 8, Feedback: 0, Transcript: 12, MaxChars: 3500, ItemChars: 300}
	if c.Retro.Excerpt != want {
		t.Errorf("retro.excerpt defaults %+v, want the seed's %+v", c.Retro.Excerpt, want)
	}
	c, err = config.Load(config.Source{Environ: []string{"MULL_RETRO_EXCERPT_FEEDBACK=25"}})
	if err != nil || c.Retro.Excerpt.Feedback != 25 {
		t.Errorf("a configured feedback cap: %+v, %v", c.Retro.Excerpt, err)
	}
	_, err = config.Load(config.Source{Environ: []string{"MULL_RETRO_EXCERPT_FEEDBACK=-1"}})
	var cerr *config.Error
	if !errors.As(err, &cerr) || cerr.Key != "retro.excerpt.feedback" || !strings.Contains(cerr.Problem, "0 (every thumbs-down)") {
		t.Errorf("feedback -1: %v", err)
	}
}
