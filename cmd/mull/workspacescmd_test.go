package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
)

// cols is a table's column gap.
var cols = regexp.MustCompile(` {2,}`)

// `mull workspaces config set|unset` and `mull config print --workspace`
// show each value with its layer: the API's over the file's over the
// global key's, the environment over all.
func TestWorkspacesConfigCommands(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience(t))
			defer cancel()
			url := migratedDB(t, ctx, dialect)
			file := filepath.Join(t.TempDir(), "mull.toml")
			if err := os.WriteFile(file, []byte("[memory]\nscope = \"both\"\n[workspaces.\"/home/u/p\"]\nretro = false\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			run := func(args ...string) (int, string, string) {
				return mull(t, ctx, append([]string{"--database-url", url, "--config", file}, args...)...)
			}
			if code, out, errOut := run("workspaces", "config", "set", "/home/u/p", "budget=5000", "ledger.mode=block"); code != 0 ||
				!strings.Contains(out, "budget") {
				t.Fatalf("set: exit %d\n%s%s", code, out, errOut)
			}
			if code, _, errOut := run("workspaces", "config", "set", "/home/u/p", "scope=global", "retro=maybe"); code != 2 || !strings.Contains(errOut, "retro") {
				t.Fatalf("bad set: exit %d, %s", code, errOut)
			}
			t.Setenv("MULL_LEDGER_MODE", "off")
			code, out, errOut := run("config", "print", "--workspace", "/home/u/p")
			if code != 0 {
				t.Fatalf("print: exit %d\n%s", code, errOut)
			}
			for _, want := range []string{"scope  both  global (file)", "budget  5000  workspace (api)", "retro  false  workspace (file)",
				"ledger.mode  off  env MULL_LEDGER_MODE", "reflection  true  default"} {
				if !strings.Contains(cols.ReplaceAllString(out, "  "), want) {
					t.Errorf("print lacks %q:\n%s", want, out)
				}
			}
			if code, out, errOut := run("workspaces", "config", "unset", "/home/u/p", "budget"); code != 0 || !strings.Contains(cols.ReplaceAllString(out, "  "), "budget  400000  default") {
				t.Fatalf("unset: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}
