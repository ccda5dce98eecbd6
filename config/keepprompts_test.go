package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
)

// llm.keep_prompts: 7 days unless set, "0" keeps none, bad or negative
// values name the key.
func TestKeepPrompts(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		env        []string
		want       time.Duration
	}{
		{"default", "", nil, 7 * 24 * time.Hour},
		{"file", "[llm]\nkeep_prompts = \"36h\"\n", nil, 36 * time.Hour},
		{"env in days", "", []string{"MULL_LLM_KEEP_PROMPTS=30d"}, 30 * 24 * time.Hour},
		{"zero keeps none", "", []string{"MULL_LLM_KEEP_PROMPTS=0"}, 0},
		{"zero in the file", "[llm]\nkeep_prompts = \"0s\"\n", nil, 0},
	} {
		src := config.Source{Environ: tt.env}
		if tt.file != "" {
			src.File = write(t, tt.file)
		}
		c, err := config.Load(src)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := c.LLM.KeepPromptsFor(); got != tt.want {
			t.Errorf("%s: keep_prompts = %s, want %s", tt.name, got, tt.want)
		}
	}
	for _, tt := range []struct {
		name string
		env  string
		want string
	}{
		{"not a duration", "MULL_LLM_KEEP_PROMPTS=a week", "invalid duration"},
		{"negative", "MULL_LLM_KEEP_PROMPTS=-1h", "must not be negative"},
	} {
		_, err := config.Load(config.Source{Environ: []string{tt.env}})
		var cerr *config.Error
		if !errors.As(err, &cerr) || cerr.Key != "llm.keep_prompts" || !strings.Contains(cerr.Problem, tt.want) {
			t.Errorf("%s: err = %v; want llm.keep_prompts: …%s…", tt.name, err, tt.want)
		}
	}
}
