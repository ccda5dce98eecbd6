package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
)

// The README's configuration reference must load as it is written.
func TestREADMEConfigLoads(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```toml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no ```toml block")
	}
	if _, err := config.Load(config.Source{File: write(t, block)}); err != nil {
		t.Fatalf("README's config does not load: %v", err)
	}
}
