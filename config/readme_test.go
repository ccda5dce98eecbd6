package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
)

// readmeTOML is the README's ```toml blocks, in order.
func readmeTOML(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	rest := string(b)
	for {
		_, after, ok := strings.Cut(rest, "```toml\n")
		if !ok {
			break
		}
		block, tail, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatal("README.md has a ```toml block that never ends")
		}
		blocks, rest = append(blocks, block), tail
	}
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d ```toml blocks; want the defaults and the examples", len(blocks))
	}
	return blocks
}

// The README's configuration reference is the defaults, all of them and
// nothing else: loaded, it gives what no file gives. Its examples load too.
func TestREADMEConfigIsTheDefaults(t *testing.T) {
	t.Setenv("DSH_HOME", "")
	blocks := readmeTOML(t)
	got, err := config.Load(config.Source{File: write(t, blocks[0])})
	if err != nil {
		t.Fatalf("README's config does not load: %v", err)
	}
	want, err := config.Load(config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	// Field by field, an empty list the same as none.
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range gv.NumField() {
		g, _ := json.Marshal(gv.Field(i).Interface())
		w, _ := json.Marshal(wv.Field(i).Interface())
		if gs, ws := strings.ReplaceAll(string(g), "[]", "null"), strings.ReplaceAll(string(w), "[]", "null"); gs != ws {
			t.Errorf("README's config block is not the defaults: %s is\n%s\nwant\n%s", gv.Type().Field(i).Name, gs, ws)
		}
	}
	// Every key the environment can set is in the block, so each is
	// documented where its default is.
	for _, k := range config.Keys() {
		leaf := k[strings.LastIndex(k, ".")+1:]
		if !strings.Contains(blocks[0], "\n"+leaf+" = ") && !strings.HasPrefix(blocks[0], leaf+" = ") {
			t.Errorf("README's config block has no line for %s", k)
		}
	}
	for i, b := range blocks[1:] {
		if _, err := config.Load(config.Source{File: write(t, b)}); err != nil {
			t.Errorf("README's toml block %d does not load: %v", i+2, err)
		}
	}
}
