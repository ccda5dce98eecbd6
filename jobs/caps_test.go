package jobs

import (
	"testing"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/retro"
)

// The config's excerpt defaults are the seed's numbers retro.DefaultCaps
// holds, and every key reaches its cap.
func TestRetroCapsFromConfig(t *testing.T) {
	c, err := config.Load(config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	if got := RetroCaps(c.Retro.Excerpt); got != retro.DefaultCaps {
		t.Fatalf("default caps %+v, want %+v", got, retro.DefaultCaps)
	}
	c, err = config.Load(config.Source{Environ: []string{
		"MULL_RETRO_EXCERPT_ERRORS=1", "MULL_RETRO_EXCERPT_TOOL_FAILURES=2", "MULL_RETRO_EXCERPT_FEEDBACK=3",
		"MULL_RETRO_EXCERPT_TRANSCRIPT=4", "MULL_RETRO_EXCERPT_MAX_CHARS=5000", "MULL_RETRO_EXCERPT_ITEM_CHARS=600",
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := retro.Caps{Errors: 1, ToolFailures: 2, Feedback: 3, Transcript: 4, MaxChars: 5000, ItemChars: 600}
	if got := RetroCaps(c.Retro.Excerpt); got != want {
		t.Fatalf("caps %+v, want %+v", got, want)
	}
}
