package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dshplugin "github.com/mullhq/mull/integrations/dsh"
)

// DSH's own template for a new profile's patch layer (rc.8's
// PROFILE_PATCH_TEMPLATE).
const dshTemplate = "# Your patch layer for this dsh profile, applied after every bundle layer:\n" +
	"# a top-level YAML array of loader patch entries (id-targeted config\n" +
	"# overrides, disables, and insert lists; `!!js` expressions allowed).\n[]\n"

// Install, install again, uninstall: the second install changes nothing and
// uninstall gives back the file byte for byte, whatever it was.
func TestPatchFileInstallUninstallRoundTrip(t *testing.T) {
	rows := mullRows("/h/mull/plugin.mjs", "http://127.0.0.1:7788", "stderr", true)
	for _, tc := range []struct {
		name    string
		before  string
		exists  bool
		blockAt int // the line the block opens on
	}{
		{"no file", "", false, 1},
		{"empty file", "", true, 1},
		{"DSH's template", dshTemplate, true, 4}, // in place of its "[]"
		{"rows of the user's", "# mine\n- id: agent-default-model\n  config: {model: x}\n", true, 4},
		{"no final newline", "- id: x\n  disabled: true", true, 3},
		{"comments only", "# nothing yet\n", true, 2},
		{"[] with a comment", "[] # empty\n", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pf, err := parsePatchFile([]byte(tc.before), tc.exists)
			if err != nil {
				t.Fatal(err)
			}
			once, err := pf.withBlock(rows)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(once), "\n")
			if len(lines) < tc.blockAt || !strings.HasPrefix(lines[tc.blockAt-1], blockStart) {
				t.Fatalf("block not on line %d:\n%s", tc.blockAt, once)
			}
			if !strings.Contains(string(once), `name: "/h/mull/plugin.mjs"`) || !strings.Contains(string(once), "- id: hmr\n  disabled: false\n  config: {root: []}\n") {
				t.Fatalf("rows missing:\n%s", once)
			}
			if strings.Contains(string(once), "\n[]") && tc.before == dshTemplate {
				t.Fatalf("the template's [] is still there beside block rows:\n%s", once)
			}
			pf2, err := parsePatchFile(once, true)
			if err != nil {
				t.Fatal(err)
			}
			twice, _ := pf2.withBlock(rows)
			if string(twice) != string(once) {
				t.Fatalf("second install changed the file:\n%s\n---\n%s", once, twice)
			}
			// A new URL replaces the block in place.
			moved, _ := pf2.withBlock(mullRows("/h/mull/plugin.mjs", "http://127.0.0.1:9", "dsh", false))
			if !strings.Contains(string(moved), `baseUrl: "http://127.0.0.1:9"`) || strings.Count(string(moved), blockStart) != 1 ||
				strings.Contains(string(moved), "id: hmr") {
				t.Fatalf("update:\n%s", moved)
			}
			pf3, _ := parsePatchFile(moved, true)
			after, remove := pf3.withoutBlock()
			if !tc.exists {
				if !remove {
					t.Fatalf("the file install created is not removed: %q", after)
				}
				return
			}
			if remove || string(after) != tc.before {
				t.Fatalf("uninstall gave (remove %v)\n%q\nwant\n%q", remove, after, tc.before)
			}
		})
	}
}

// A file mull cannot add to safely is refused with the line and what to do.
func TestPatchFileRefused(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"a hand-made mull row", "- insert:\n    - id: mull\n      name: /x/plugin.mjs\n", "line 2 already loads a row with id mull"},
		{"a flow row", "- {id: \"mull\", name: /x}\n", "line 1 already loads a row with id mull"},
		{"not mull", "- id: mullet\n- {id: x, config: {name: mull}}\n", ""},
		{"a flow list with rows", "[{id: hmr, disabled: false}]\n", "line 1: \"[{id: hmr, disabled: false}]\": the file is not a block list"},
		{"a mapping", "id: hmr\n", "already"}, // `id: hmr` is not mull's…
		{"an open block", "# >>> mull: x\n- id: hmr\n", "line 1 opens a '# >>> mull' block that no '# <<< mull' line closes"},
		{"two blocks", "# >>> mull\n# <<< mull\n# >>> mull\n# <<< mull\n", "line 3: a second '# >>> mull' block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parsePatchFile([]byte(tc.body), true)
			switch {
			case tc.want == "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case tc.name == "a mapping":
				if err == nil || !strings.Contains(err.Error(), "not a block list") {
					t.Fatalf("err = %v, want not a block list", err)
				}
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNeedsHMRWorkaround(t *testing.T) {
	for v, want := range map[string]bool{
		"": true, "0.1.0-rc.6": true, "0.1.0-rc.8": true, "0.1.5-rc.2": true,
		"0.1.5": false, "0.2.0": false, "garbage": true,
	} {
		if got := (dshInstall{version: v}).needsHMRWorkaround(); got != want {
			t.Errorf("DSH %q: needs = %v, want %v", v, got, want)
		}
	}
}

// fakeDSH is a DSH installation's package directory (what --dsh names).
func fakeDSH(t *testing.T, version string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node_modules", "@deepseek-ai", "dsh")
	if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "package.json"), `{"name": "@deepseek-ai/dsh", "version": "`+version+`"}`)
	writeFile(t, filepath.Join(dir, "lib", "bin.js"), "#!/usr/bin/env node\n")
	return dir
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mull dsh install into a fresh home, again, then uninstall: what each
// prints, what is on disk, and that the home is as it was.
func TestDSHInstallUninstall(t *testing.T) {
	ctx := context.Background()
	home := filepath.Join(t.TempDir(), "dsh-home")
	t.Setenv("DSH_HOME", "")
	dsh := fakeDSH(t, "0.1.0-rc.8")
	// The user's own row in headless, which DSH already created.
	headless := filepath.Join(home, "profiles", "headless", "cordis.patch.yml")
	mine := dshTemplate[:len(dshTemplate)-3] + "- id: agent-default-model\n  config: {provider: deepseek-official, model: deepseek-v4-flash}\n"
	writeFile(t, headless, mine)
	writeFile(t, filepath.Join(home, "profiles", "headless", "package.json"), `{"dsh": {"profile": {"bundles": ["@deepseek-ai/dsh-base", "@deepseek-ai/dsh-headless"]}}}`)

	code, out, errOut := mull(t, ctx, "--listen", "0.0.0.0:7999", "dsh", "install", "--dsh-home", home, "--dsh", filepath.Join(dsh, "lib", "bin.js"))
	if code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"DSH home " + home + " (DSH 0.1.0-rc.8 at " + dsh + ", --dsh)",
		"plugin: " + filepath.Join(home, "mull", "plugin.mjs") + ": wrote it and",
		"web: " + filepath.Join(home, "profiles", "web", "cordis.patch.yml") + ": created it with the mull row and the hmr row DSH 0.1.0-rc.8 needs (baseUrl http://127.0.0.1:7999)",
		"headless: " + headless + ": added the mull row and the hmr row DSH 0.1.0-rc.8 needs (baseUrl http://127.0.0.1:7999)",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("install output lacks %q:\n%s", want, out)
		}
	}
	// The plugin is real: the files DSH imports, at the path the row names.
	entry := filepath.Join(home, "mull", "plugin.mjs")
	for _, f := range []string{entry, filepath.Join(home, "mull", "lib", "bridge.mjs"), filepath.Join(home, "mull", "README.md")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("plugin file: %v", err)
		}
	}
	if src := readFile(t, entry); !strings.Contains(src, "export async function apply") {
		t.Fatalf("plugin.mjs is not the plugin:\n%.200s", src)
	}
	got := readFile(t, headless)
	wantTail := `- id: agent-default-model
  config: {provider: deepseek-official, model: deepseek-v4-flash}
# >>> mull: written by 'mull dsh install'; 'mull dsh uninstall' removes it
# mull's bridge plugin; its config keys: "` + filepath.Join(home, "mull", "README.md") + `"
- insert:
    - id: mull
      name: "` + entry + `"
      config:
        baseUrl: "http://127.0.0.1:7999"
        logTo: "stderr"   # headless DSH keeps its logger's lines in memory only
# DSH 0.1.0-rc.8 to 0.1.5-rc.2: the bundle disables hmr, but the launcher needs it to watch this file
- id: hmr
  disabled: false
  config: {root: []}
# <<< mull
`
	if !strings.HasSuffix(got, wantTail) || !strings.HasPrefix(got, mine) {
		t.Fatalf("headless patch file:\n%s\nwant the user's lines, then:\n%s", got, wantTail)
	}
	if web := readFile(t, filepath.Join(home, "profiles", "web", "cordis.patch.yml")); strings.Contains(web, "logTo") || !strings.Contains(web, "id: hmr") {
		t.Fatalf("web patch file:\n%s", web)
	}

	// Again: nothing changes, and it says so.
	code, out, _ = mull(t, ctx, "--listen", "0.0.0.0:7999", "dsh", "install", "--dsh-home", home, "--dsh", dsh)
	if code != 0 || strings.Count(out, ": unchanged") != 3 || strings.Contains(out, "next:") {
		t.Fatalf("second install: exit %d\n%s", code, out)
	}
	// An older mull's file that this one no longer ships is removed.
	writeFile(t, filepath.Join(home, "mull", "lib", "gone.mjs"), "old")
	var m installedFiles
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(home, "mull", installedName))), &m); err != nil {
		t.Fatal(err)
	}
	m.Files = append(m.Files, "lib/gone.mjs")
	b, _ := json.Marshal(m)
	writeFile(t, filepath.Join(home, "mull", installedName), string(b))
	writeFile(t, filepath.Join(home, "mull", "lib", "bridge.mjs"), "stale")
	code, out, _ = mull(t, ctx, "--listen", "0.0.0.0:7999", "dsh", "install", "--dsh-home", home, "--dsh", dsh, "--profile", "headless")
	if code != 0 || !strings.Contains(out, "updated 1 files, removed 1 an older mull wrote (lib/gone.mjs)") {
		t.Fatalf("install over an older one: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(home, "mull", "lib", "gone.mjs")); !os.IsNotExist(err) {
		t.Fatalf("stale file kept: %v", err)
	}

	// A dry run of uninstall changes nothing.
	before := readFile(t, headless)
	code, out, _ = mull(t, ctx, "dsh", "uninstall", "--dsh-home", home, "--dry-run")
	if code != 0 || !strings.Contains(out, "[dry run] headless: ") || readFile(t, headless) != before {
		t.Fatalf("uninstall --dry-run: exit %d\n%s", code, out)
	}
	// Uninstall from one profile keeps the plugin for the other.
	code, out, _ = mull(t, ctx, "dsh", "uninstall", "--dsh-home", home, "--profile", "web")
	if code != 0 || !strings.Contains(out, "web: "+filepath.Join(home, "profiles", "web", "cordis.patch.yml")+": removed the file mull created") ||
		!strings.Contains(out, "kept, profiles headless still load it") {
		t.Fatalf("uninstall --profile web: exit %d\n%s", code, out)
	}
	code, out, _ = mull(t, ctx, "dsh", "uninstall", "--dsh-home", home)
	if code != 0 || !strings.Contains(out, "headless: "+headless+": removed the mull block") || !strings.Contains(out, fmt.Sprintf("removed the %d files mull wrote", embeddedFiles(t)+1)) {
		t.Fatalf("uninstall: exit %d\n%s", code, out)
	}
	if got := readFile(t, headless); got != mine {
		t.Fatalf("after uninstall the user's file is\n%q\nwant\n%q", got, mine)
	}
	for _, gone := range []string{filepath.Join(home, "mull"), filepath.Join(home, "profiles", "web", "cordis.patch.yml")} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Fatalf("%s is still there after uninstall (%v)", gone, err)
		}
	}
	code, out, _ = mull(t, ctx, "dsh", "uninstall", "--dsh-home", home)
	if code != 0 || !strings.Contains(out, "no profile loads mull's plugin") {
		t.Fatalf("second uninstall: exit %d\n%s", code, out)
	}
}

// What install finds about DSH decides the hmr row; bad input is exit 2
// and writes nothing.
func TestDSHInstallChoices(t *testing.T) {
	ctx := context.Background()
	t.Setenv("DSH_HOME", "")
	t.Run("newer DSH: no hmr row, and a note", func(t *testing.T) {
		home := t.TempDir()
		code, out, _ := mull(t, ctx, "dsh", "install", "--dsh-home", home, "--dsh", fakeDSH(t, "0.2.0"), "--profile", "headless")
		if code != 0 || !strings.Contains(out, "note: DSH 0.2.0 is newer") || strings.Contains(readFile(t, filepath.Join(home, "profiles", "headless", "cordis.patch.yml")), "id: hmr") {
			t.Fatalf("exit %d\n%s", code, out)
		}
		code, out, _ = mull(t, ctx, "dsh", "install", "--dsh-home", home, "--dsh", fakeDSH(t, "0.2.0"), "--profile", "headless", "--hmr-workaround", "yes")
		if code != 0 || !strings.Contains(readFile(t, filepath.Join(home, "profiles", "headless", "cordis.patch.yml")), "id: hmr") {
			t.Fatalf("--hmr-workaround yes: exit %d\n%s", code, out)
		}
	})
	t.Run("the DSH this home last booted", func(t *testing.T) {
		home := t.TempDir()
		dsh := fakeDSH(t, "0.1.0-rc.8")
		link := filepath.Join(home, "profiles", "node_modules", "@deepseek-ai", "dsh")
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(dsh, link); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", t.TempDir())
		code, out, _ := mull(t, ctx, "dsh", "install", "--dsh-home", home, "--dry-run")
		if code != 0 || !strings.Contains(out, "(DSH 0.1.0-rc.8 at "+dsh+", the installation DSH last booted from this home)") ||
			!strings.Contains(out, "[dry run] web: ") || !strings.Contains(out, "dry run: nothing written") {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if _, err := os.Stat(filepath.Join(home, "mull")); !os.IsNotExist(err) {
			t.Fatalf("a dry run wrote the plugin: %v", err)
		}
		if _, err := os.Stat(filepath.Join(home, "profiles", "web")); !os.IsNotExist(err) {
			t.Fatalf("a dry run wrote a profile: %v", err)
		}
	})
	t.Run("unknown DSH: the workaround", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("PATH", t.TempDir())
		code, out, _ := mull(t, ctx, "dsh", "install", "--dsh-home", home, "--profile", "headless")
		if code != 0 || !strings.Contains(out, "DSH version unknown: no DSH installation found") ||
			!strings.Contains(readFile(t, filepath.Join(home, "profiles", "headless", "cordis.patch.yml")), "id: hmr") {
			t.Fatalf("exit %d\n%s", code, out)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no such profile", []string{"--profile", "tui"}, `--profile: DSH has no profile "tui"`},
		{"bad profile name", []string{"--profile", "../x"}, `--profile: "../x" is not a DSH profile name`},
		{"bad url", []string{"--url", "127.0.0.1:7788"}, `--url: "127.0.0.1:7788" is not an http:// or https:// URL`},
		{"not DSH", []string{"--dsh", "/"}, "--dsh: / is not DSH's package"},
		{"bad hmr choice", []string{"--hmr-workaround", "maybe"}, `--hmr-workaround: "maybe" is not one of auto, yes, no`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			code, out, errOut := mull(t, ctx, append([]string{"dsh", "install", "--dsh-home", home}, tc.args...)...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q\n%s", code, errOut, tc.want, out)
			}
			if entries, _ := os.ReadDir(home); len(entries) != 0 {
				t.Fatalf("a refused install wrote %v", entries)
			}
		})
	}
	t.Run("a hand-made row: refused, nothing written", func(t *testing.T) {
		home := t.TempDir()
		web := filepath.Join(home, "profiles", "web", "cordis.patch.yml")
		writeFile(t, web, "- insert:\n    - id: mull\n      name: /path/to/mull/integrations/dsh/plugin.mjs\n")
		code, _, errOut := mull(t, ctx, "dsh", "install", "--dsh-home", home)
		if code != 1 || !strings.Contains(errOut, web+": line 2 already loads a row with id mull") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		if _, err := os.Stat(filepath.Join(home, "mull")); !os.IsNotExist(err) {
			t.Fatalf("the plugin was written although a profile was refused: %v", err)
		}
	})
	t.Run("a row in the home-level layer: refused", func(t *testing.T) {
		home := t.TempDir()
		writeFile(t, filepath.Join(home, "cordis.patch.yml"), "# every profile\n- insert:\n    - {id: x}\n    - id: 'mull'\n")
		code, _, errOut := mull(t, ctx, "dsh", "install", "--dsh-home", home)
		if code != 1 || !strings.Contains(errOut, filepath.Join(home, "cordis.patch.yml")+": line 4 already loads a row with id mull in every profile") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}

// embeddedFiles counts the plugin's files in the binary: what install
// writes, besides its list of them.
func embeddedFiles(t *testing.T) int {
	t.Helper()
	n := 0
	err := fs.WalkDir(dshplugin.Plugin, ".", func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A first install that fails halfway (a full disk, say) leaves only files
// its list names, so running it again finishes the job, and uninstall
// removes them all.
func TestDSHInstallAfterAFailedOne(t *testing.T) {
	ctx := context.Background()
	home := filepath.Join(t.TempDir(), "dsh-home")
	t.Setenv("DSH_HOME", "")
	dsh := fakeDSH(t, "0.1.0-rc.8")
	args := []string{"dsh", "install", "--dsh-home", home, "--dsh", filepath.Join(dsh, "lib", "bin.js")}
	written := 0
	writePluginFile = func(path string, b []byte) error {
		if written == 2 {
			return fmt.Errorf("write %s: no space left on device", path)
		}
		written++
		return writeFileAtomic(path, b)
	}
	t.Cleanup(func() { writePluginFile = writeFileAtomic })
	if code, out, errOut := mull(t, ctx, args...); code == 0 || !strings.Contains(errOut, "no space left on device") {
		t.Fatalf("install on a full disk: exit %d\n%s%s", code, out, errOut)
	}
	writePluginFile = writeFileAtomic
	if code, out, errOut := mull(t, ctx, args...); code != 0 {
		t.Fatalf("install again: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mull(t, ctx, "dsh", "uninstall", "--dsh-home", home); code != 0 {
		t.Fatalf("uninstall: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "mull")); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(filepath.Join(home, "mull"))
		t.Fatalf("uninstall left %v (%v)", entries, err)
	}
}
