package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/mod/semver"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/events"
	dshplugin "github.com/mullhq/mull/integrations/dsh"
)

func newDSHCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dsh",
		Short: "Install mull's bridge plugin into DeepSeek Harness",
	}
	cmd.AddCommand(newDSHInstallCmd(g), newDSHUninstallCmd(g))
	return cmd
}

// dshFlags are what install and uninstall share.
type dshFlags struct {
	home     string
	profiles []string
	dryRun   bool
}

func (f *dshFlags) add(cmd *cobra.Command, profileHelp string) {
	cmd.Flags().StringVar(&f.home, "dsh-home", "", "DSH's home (default dsh.home: MULL_DSH_HOME, $DSH_HOME or ~/.dsh)")
	cmd.Flags().StringSliceVar(&f.profiles, "profile", nil, profileHelp)
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "say what would change and change nothing")
}

func newDSHInstallCmd(g *globals) *cobra.Command {
	var f dshFlags
	var url, dshPath, hmr string
	cmd := &cobra.Command{
		Use:   "install [--profile web|headless] [--dsh-home DIR]",
		Short: "Load mull's bridge plugin in DSH's profiles",
		Long: `Install mull's DSH bridge plugin, so DSH sessions reach mull and mull's memory
reaches DSH's system prompt.

It writes the plugin this mull binary carries (plugin.mjs, lib/, README.md)
to DIR/mull under the DSH home, so the path DSH loads is real and stays put
whichever way mull was installed, and adds one block to each profile's own
patch layer, DIR/profiles/<profile>/cordis.patch.yml:

  # >>> mull …
  - insert:
      - id: mull
        name: DIR/mull/plugin.mjs
        config: {baseUrl: http://127.0.0.1:7788, …}
  # <<< mull

The profiles are DSH's shipped ones, web and headless, unless --profile
names others (custom profiles must exist). For headless the plugin logs to
stderr (headless DSH keeps its logger's lines in memory only).

On the DSH versions that need it (0.1.0-rc.8 and the others published so
far) the block also turns the hmr row back on, with nothing to watch but
the patch files: the web and headless bundles disable it, but the launcher
needs the HMR service to watch the profile's patch file, and exits 1
without it ("user patch-layer watching requires the Cordis HMR service"),
even before mull is installed. mull reads DSH's version from --dsh, else
from the installation DSH links under DIR/profiles/node_modules when it
boots, else from dsh on PATH; an unknown version gets the workaround.
--hmr-workaround=yes|no overrides that.

baseUrl comes from --url, else from mull's listen address. mull's api_token
is not written to DSH's files: give DSH the environment variable
MULL_API_TOKEN (the plugin reads it).

Run it again after upgrading mull: it is idempotent, rewrites what changed
and says "unchanged" for the rest. Lines outside the block are left as they
are; a file that already loads a plugin with id mull outside the block is
refused. 'mull dsh uninstall' removes exactly what this wrote.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if url == "" {
				url = "http://" + loopbackListen(cfg.Listen)
			} else if err := checkBaseURL(url); err != nil {
				return usageErr("--url: %v", err)
			}
			if !slices.Contains([]string{"auto", "yes", "no"}, hmr) {
				return usageErr("--hmr-workaround: %q is not one of auto, yes, no", hmr)
			}
			in, err := f.installer(cfg)
			if err != nil {
				return err
			}
			dsh := findDSH(in.home, dshPath)
			if dshPath != "" && dsh.err != nil {
				return usageErr("--dsh: %v", dsh.err)
			}
			return in.install(g, installOpts{url: url, dsh: dsh, hmr: hmr, apiToken: cfg.APIToken != ""})
		},
	}
	f.add(cmd, "DSH profiles to install into (default web,headless; repeat or comma-separate)")
	cmd.Flags().StringVar(&url, "url", "", "where DSH reaches mull (default http:// and mull's listen address, on loopback)")
	cmd.Flags().StringVar(&dshPath, "dsh", "", "DSH's installation (its package directory, lib/bin.js or the dsh command), to read its version")
	cmd.Flags().StringVar(&hmr, "hmr-workaround", "auto", "turn the web and headless profiles' hmr row back on: auto (by DSH version), yes or no")
	return cmd
}

func newDSHUninstallCmd(g *globals) *cobra.Command {
	var f dshFlags
	cmd := &cobra.Command{
		Use:   "uninstall [--profile P] [--dsh-home DIR]",
		Short: "Remove what 'mull dsh install' wrote",
		Long: `Remove the block 'mull dsh install' wrote from each profile's cordis.patch.yml
(putting back the "[]" it replaced, deleting a file it created), and, once
no profile loads the plugin any more, the plugin files under DIR/mull that
it wrote. Nothing else is touched. Without --profile, every profile under
the DSH home that has the block.

On DSH 0.1.0-rc.8 the web and headless profiles then exit 1 at start again
("user patch-layer watching requires the Cordis HMR service"), as they did
before the install: the hmr row was part of the block.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			in, err := f.installer(cfg)
			if err != nil {
				return err
			}
			return in.uninstall(g, len(f.profiles) > 0)
		},
	}
	f.add(cmd, "DSH profiles to uninstall from (default: every profile that has the block)")
	return cmd
}

// installer is one install or uninstall into one DSH home.
type installer struct {
	home     string
	profiles []string
	dryRun   bool
}

func (f *dshFlags) installer(cfg config.Config) (*installer, error) {
	home := cmp.Or(f.home, cfg.DSH.Home)
	if err := checkText("--dsh-home", home); err != nil {
		return nil, err
	}
	if home == "" {
		return nil, usageErr("no DSH home: set --dsh-home, MULL_DSH_HOME or DSH_HOME")
	}
	abs, err := filepath.Abs(home)
	if err != nil {
		return nil, usageErr("--dsh-home: %v", err)
	}
	var profiles []string
	for _, p := range f.profiles {
		if err := checkProfileName(p); err != nil {
			return nil, usageErr("--profile: %v", err)
		}
		if !slices.Contains(profiles, p) {
			profiles = append(profiles, p)
		}
	}
	return &installer{home: abs, profiles: profiles, dryRun: f.dryRun}, nil
}

// The rules of DSH's resolveProfileDir.
func checkProfileName(p string) error {
	if p == "" || strings.ContainsAny(p, `/\`) || p == "." || p == ".." || p == "node_modules" {
		return fmt.Errorf("%q is not a DSH profile name", p)
	}
	return checkText("--profile", p)
}

// disablesHMR: the profile has a bundle that turns the hmr row off (both
// shipped ones do; dsh-base alone keeps it on, watching its modules).
func disablesHMR(bundles []string) bool {
	return slices.Contains(bundles, "@deepseek-ai/dsh-headless") || slices.Contains(bundles, "@deepseek-ai/dsh-web-app")
}

// shippedProfiles are the profiles DSH creates on first use (rc.8's
// PROFILE_TEMPLATES), with the bundles they are made of.
var shippedProfiles = map[string][]string{
	"web":      {"@deepseek-ai/dsh-base", "@deepseek-ai/dsh-web-app"},
	"headless": {"@deepseek-ai/dsh-base", "@deepseek-ai/dsh-headless"},
}

// would marks a change a dry run only reports.
func (in *installer) would(change bool) string {
	if in.dryRun && change {
		return "[dry run] "
	}
	return ""
}

func (in *installer) pluginDir() string          { return filepath.Join(in.home, "mull") }
func (in *installer) profileDir(p string) string { return filepath.Join(in.home, "profiles", p) }
func (in *installer) patchPath(p string) string {
	return filepath.Join(in.profileDir(p), "cordis.patch.yml")
}

// installOpts are install's own choices.
type installOpts struct {
	url      string
	dsh      dshInstall
	hmr      string // auto, yes, no
	apiToken bool   // mull has an api_token: say how DSH gets it
}

func (in *installer) install(g *globals, o installOpts) error {
	profiles := in.profiles
	if len(profiles) == 0 {
		profiles = []string{"web", "headless"}
	}
	// Check every profile before writing anything: nothing half-installed.
	type plan struct {
		profile, path string
		before, after []byte
		exists        bool
		hmr           bool
	}
	var plans []plan
	entry := filepath.Join(in.pluginDir(), dshplugin.Entry)
	// DSH applies its home-level layer to every profile: a mull row there
	// would load the plugin twice.
	if b, err := os.ReadFile(filepath.Join(in.home, "cordis.patch.yml")); err == nil {
		for i, l := range strings.Split(string(b), "\n") {
			if isMullRow(strings.TrimSpace(l)) {
				return fmt.Errorf("%s: line %d already loads %s in every profile; remove that row and run it again", filepath.Join(in.home, "cordis.patch.yml"), i+1, hintMullRow)
			}
		}
	}
	for _, p := range profiles {
		bundles, err := profileBundles(in.profileDir(p), p)
		if err != nil {
			return err
		}
		hmr := disablesHMR(bundles) && (o.hmr == "yes" || o.hmr == "auto" && o.dsh.needsHMRWorkaround())
		path := in.patchPath(p)
		before, err := os.ReadFile(path)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		pf, err := parsePatchFile(before, exists)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		logTo := "dsh"
		if slices.Contains(bundles, "@deepseek-ai/dsh-headless") {
			logTo = "stderr"
		}
		after, err := pf.withBlock(mullRows(entry, o.url, logTo, hmr))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		plans = append(plans, plan{profile: p, path: path, before: before, after: after, exists: exists, hmr: hmr})
	}

	fmt.Fprintf(g.stdout, "DSH home %s (%s)\n", in.home, o.dsh.describe())
	changed, err := in.writePlugin(g)
	if err != nil {
		return err
	}
	for _, pl := range plans {
		what := "unchanged"
		switch {
		case bytes.Equal(pl.before, pl.after) && pl.exists:
		case !pl.exists:
			what = "created it with the mull row"
		case !bytes.Contains(pl.before, []byte(blockStart)):
			what = "added the mull row"
		default:
			what = "updated the mull row"
		}
		if what != "unchanged" {
			if pl.hmr {
				what += " and the hmr row " + o.dsh.short() + " needs"
			}
			what += fmt.Sprintf(" (baseUrl %s)", o.url)
			if !in.dryRun {
				if err := writeFileAtomic(pl.path, pl.after); err != nil {
					return err
				}
			}
			changed = true
		}
		fmt.Fprintf(g.stdout, "%s%s: %s: %s\n", in.would(what != "unchanged"), pl.profile, pl.path, what)
	}
	if in.dryRun {
		fmt.Fprintln(g.stdout, "dry run: nothing written")
		return nil
	}
	if o.dsh.version != "" && !o.dsh.needsHMRWorkaround() && o.hmr == "auto" {
		fmt.Fprintf(g.stdout, "note: DSH %s is newer than the versions mull knows to need the hmr row, so none was written; if DSH fails with \"user patch-layer watching requires the Cordis HMR service\", run again with --hmr-workaround=yes\n", o.dsh.version)
	}
	if o.apiToken {
		fmt.Fprintln(g.stdout, "note: mull has an api_token; start DSH with MULL_API_TOKEN set to it (it is not written to DSH's files)")
	}
	if changed {
		fmt.Fprintf(g.stdout, "next: run 'mull serve', then DSH (dsh web, or dsh --profile headless \"task\"); 'dsh --profile %s --dump-config' shows the row as DSH reads it\n", plans[0].profile)
	}
	return nil
}

// writePlugin writes the embedded plugin under the DSH home, with a list of
// the files it wrote for uninstall, and removes files an older install
// wrote that this mull no longer has. It reports whether anything changed.
func (in *installer) writePlugin(g *globals) (bool, error) {
	dir := in.pluginDir()
	old, err := readInstalled(dir)
	if err != nil {
		return false, err
	}
	var files []string
	if err := fs.WalkDir(dshplugin.Plugin, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	}); err != nil {
		return false, err
	}
	mpath := filepath.Join(dir, installedName)
	before, _ := os.ReadFile(mpath) // the list as it was, to tell what changed
	if !in.dryRun {
		// The list goes first, naming the old files and the new: a write that
		// fails halfway leaves only files the list names, so the next install
		// (or an uninstall) knows them as mull's instead of refusing the dir.
		union := slices.Clone(old.Files)
		for _, f := range files {
			if !slices.Contains(union, f) {
				union = append(union, f)
			}
		}
		if err := writeManifest(dir, installedFiles{Mull: mullVersion(), Files: union}); err != nil {
			return false, err
		}
	}
	var wrote, stale []string
	for _, f := range files {
		want, err := fs.ReadFile(dshplugin.Plugin, f)
		if err != nil {
			return false, err
		}
		target := filepath.Join(dir, filepath.FromSlash(f))
		if have, err := os.ReadFile(target); err == nil && bytes.Equal(have, want) {
			continue
		}
		wrote = append(wrote, f)
		if in.dryRun {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return false, err
		}
		if err := writePluginFile(target, want); err != nil {
			return false, err
		}
	}
	for _, f := range old.Files {
		if !slices.Contains(files, f) {
			stale = append(stale, f)
			if !in.dryRun {
				if err := os.Remove(filepath.Join(dir, filepath.FromSlash(f))); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return false, err
				}
			}
		}
	}
	manifest := installedFiles{Mull: mullVersion(), Files: files}
	if !in.dryRun {
		if err := writeManifest(dir, manifest); err != nil {
			return false, err
		}
	}
	if !bytes.Equal(before, manifestBytes(manifest)) && len(wrote) == 0 && len(stale) == 0 {
		wrote = append(wrote, installedName)
	}
	entry := filepath.Join(dir, dshplugin.Entry)
	switch {
	case len(wrote) == 0 && len(stale) == 0:
		fmt.Fprintf(g.stdout, "plugin: %s: unchanged\n", entry)
		return false, nil
	case len(old.Files) == 0:
		fmt.Fprintf(g.stdout, "%splugin: %s: wrote it and %d more files (%s)\n", in.would(true), entry, len(files)-1, mullVersion())
	default:
		msg := fmt.Sprintf("%splugin: %s: updated %d files", in.would(true), entry, len(wrote))
		if len(stale) > 0 {
			msg += fmt.Sprintf(", removed %d an older mull wrote (%s)", len(stale), strings.Join(stale, ", "))
		}
		fmt.Fprintf(g.stdout, "%s (%s)\n", msg, mullVersion())
	}
	return true, nil
}

func (in *installer) uninstall(g *globals, named bool) error {
	profiles := in.profiles
	if !named {
		entries, err := os.ReadDir(filepath.Join(in.home, "profiles"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			if e.IsDir() && e.Name() != "node_modules" {
				profiles = append(profiles, e.Name())
			}
		}
	}
	type plan struct {
		profile, path string
		after         []byte
		remove        bool
	}
	var plans []plan
	for _, p := range profiles {
		path := in.patchPath(p)
		before, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		pf, err := parsePatchFile(before, true)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if !pf.had {
			continue
		}
		after, remove := pf.withoutBlock()
		plans = append(plans, plan{profile: p, path: path, after: after, remove: remove})
	}
	fmt.Fprintf(g.stdout, "DSH home %s\n", in.home)
	for _, pl := range plans {
		what := "removed the mull block"
		if pl.remove {
			what = "removed the file mull created"
		}
		if !in.dryRun {
			var err error
			if pl.remove {
				err = os.Remove(pl.path)
			} else {
				err = writeFileAtomic(pl.path, pl.after)
			}
			if err != nil {
				return err
			}
		}
		fmt.Fprintf(g.stdout, "%s%s: %s: %s\n", in.would(true), pl.profile, pl.path, what)
	}
	if len(plans) == 0 {
		fmt.Fprintln(g.stdout, "no profile loads mull's plugin")
	}
	// The plugin files go once no profile loads them.
	left := slices.DeleteFunc(in.profilesWithBlock(), func(p string) bool {
		return slices.ContainsFunc(plans, func(pl plan) bool { return pl.profile == p })
	})
	if len(left) > 0 {
		fmt.Fprintf(g.stdout, "plugin: %s: kept, profiles %s still load it\n", in.pluginDir(), strings.Join(left, ", "))
	} else if err := in.removePlugin(g); err != nil {
		return err
	}
	if in.dryRun {
		fmt.Fprintln(g.stdout, "dry run: nothing removed")
	}
	return nil
}

func (in *installer) profilesWithBlock() []string {
	entries, _ := os.ReadDir(filepath.Join(in.home, "profiles"))
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(in.patchPath(e.Name()))
		if err != nil {
			continue
		}
		if pf, err := parsePatchFile(b, true); err == nil && pf.had {
			out = append(out, e.Name())
		}
	}
	return out
}

func (in *installer) removePlugin(g *globals) error {
	dir := in.pluginDir()
	old, err := readInstalled(dir)
	if err != nil {
		return err
	}
	if old.Files == nil {
		return nil
	}
	if !in.dryRun {
		for _, f := range append(old.Files, installedName) {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(f))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		// Directories it made, when now empty; anything else stays.
		var dirs []string
		for _, f := range old.Files {
			for d := filepath.Dir(filepath.FromSlash(f)); d != "."; d = filepath.Dir(d) {
				dirs = append(dirs, filepath.Join(dir, d))
			}
		}
		slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
		for _, d := range append(slices.Compact(dirs), dir) {
			_ = os.Remove(d) // fails when not empty: kept
		}
	}
	fmt.Fprintf(g.stdout, "%splugin: %s: removed the %d files mull wrote\n", in.would(true), dir, len(old.Files)+1)
	return nil
}

// installedName lists, under the plugin directory, the files install wrote.
const installedName = ".mull-installed.json"

type installedFiles struct {
	Mull  string   `json:"mull"`
	Files []string `json:"files"`
}

// readInstalled reads the list of files an earlier install wrote; none when
// there was none. A plugin directory holding files without the list was not
// made by mull, and is refused.
// writePluginFile writes one of the plugin's files; a test makes it fail.
var writePluginFile = writeFileAtomic

func manifestBytes(m installedFiles) []byte {
	b, _ := json.MarshalIndent(m, "", "  ") // strings only: always marshals
	return append(b, '\n')
}

// writeManifest writes the list of the plugin's files, when it differs.
func writeManifest(dir string, m installedFiles) error {
	b := manifestBytes(m)
	path := filepath.Join(dir, installedName)
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, b) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeFileAtomic(path, b)
}

func readInstalled(dir string) (installedFiles, error) {
	var m installedFiles
	b, err := os.ReadFile(filepath.Join(dir, installedName))
	if errors.Is(err, fs.ErrNotExist) {
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			return m, fmt.Errorf("%s holds files 'mull dsh install' did not write (no %s); move them away first", dir, installedName)
		}
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(dir, installedName), err)
	}
	for _, f := range m.Files {
		if !fs.ValidPath(f) {
			return m, fmt.Errorf("%s: %q is not a path inside %s", filepath.Join(dir, installedName), f, dir)
		}
	}
	return m, nil
}

// profileBundles are the bundles a profile is made of: its manifest's, or,
// for a shipped profile DSH has not created yet, the template's. A custom
// profile must exist.
func profileBundles(dir, name string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if errors.Is(err, fs.ErrNotExist) {
		if t, ok := shippedProfiles[name]; ok {
			return t, nil
		}
		return nil, usageErr("--profile: DSH has no profile %q (%s has no package.json); DSH ships web and headless, and makes others with 'dsh plugin --profile %s add <package>'", name, dir, name)
	}
	if err != nil {
		return nil, err
	}
	var m struct {
		DSH struct {
			Profile struct {
				Bundles []string `json:"bundles"`
			} `json:"profile"`
		} `json:"dsh"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "package.json"), err)
	}
	return m.DSH.Profile.Bundles, nil
}

// mullRows are the patch rows of the block: the plugin, and the hmr row
// when the profile needs it (integrations/dsh's PatchRows, which a DSH
// benchmark cell's home shares).
func mullRows(entry, url, logTo string, hmr bool) []string {
	return dshplugin.PatchRows(dshplugin.Rows{Entry: entry, BaseURL: url, LogTo: logTo, HMR: hmr})
}

// The block's marker lines.
const (
	blockStart   = "# >>> mull"
	blockHeader  = blockStart + ": written by 'mull dsh install'; 'mull dsh uninstall' removes it"
	blockEnd     = "# <<< mull"
	wasPrefix    = "# mull replaced this line, and uninstall puts it back: "
	createdLine  = "# mull created this file; uninstall deletes it if nothing else is in it"
	hintMullRow  = "a row with id mull"
	hintFlowList = "not a block list"
)

// hmrFixedAfter is the newest DSH whose launcher mull knows to need the
// hmr row: rc.8's and 0.1.5-rc.2's create the HMR service too late for
// their user-patch watcher (the same code in both).
const hmrFixedAfter = "v0.1.5-rc.2"

// needsHMRWorkaround: this DSH's web and headless profiles exit 1 unless
// their patch layer turns the hmr row back on. Unknown versions get the workaround:
// every published DSH needs it.
func (d dshInstall) needsHMRWorkaround() bool {
	v := "v" + d.version
	if d.version == "" || !semver.IsValid(v) {
		return true
	}
	return semver.Compare(v, hmrFixedAfter) <= 0
}

// patchFile is a profile's cordis.patch.yml (a YAML list of patch rows),
// read as lines, with mull's block taken out. DSH's own template is
// "[]" under comments; anything else is what the user wrote.
type patchFile struct {
	lines   []string // the file without mull's block
	nums    []int    // each line's number in the file as read
	at      int      // where the block is, or goes
	had     bool     // the file had the block
	was     string   // the line the block replaced ("[]"), if any
	created bool     // the block's install created the file
}

func parsePatchFile(b []byte, exists bool) (patchFile, error) {
	var pf patchFile
	all := strings.Split(string(b), "\n")
	start, end := -1, -1
	for i, l := range all {
		switch {
		case l == blockStart || strings.HasPrefix(l, blockStart+":") || strings.HasPrefix(l, blockStart+" "):
			if start >= 0 {
				return pf, fmt.Errorf("line %d: a second '%s' block; keep one", i+1, blockStart)
			}
			start = i
		case strings.HasPrefix(l, blockEnd) && start >= 0 && end < 0:
			end = i
		}
	}
	switch {
	case start >= 0 && end < 0:
		return pf, fmt.Errorf("line %d opens a '%s' block that no '%s' line closes; fix it by hand", start+1, blockStart, blockEnd)
	case start >= 0:
		pf.had, pf.at = true, start
		for _, l := range all[start+1 : end] {
			if w, ok := strings.CutPrefix(l, wasPrefix); ok {
				pf.was = w
			}
			if l == createdLine {
				pf.created = true
			}
		}
		pf.lines = append(slices.Clone(all[:start]), all[end+1:]...)
		for i := range all {
			if i < start || i > end {
				pf.nums = append(pf.nums, i+1)
			}
		}
	default:
		pf.lines = all
		for i := range all {
			pf.nums = append(pf.nums, i+1)
		}
		pf.created = !exists
	}
	// What is left must be a block list of rows (or DSH's "[]"), and must
	// not load mull already.
	var content []int
	for i, l := range pf.lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if isMullRow(t) {
			return pf, fmt.Errorf("line %d already loads %s outside the block 'mull dsh install' writes (an earlier install by hand?); remove that row and run it again", pf.nums[i], hintMullRow)
		}
		if l[0] != ' ' && l[0] != '\t' {
			content = append(content, i)
		}
	}
	for _, i := range content {
		t := strings.TrimSpace(pf.lines[i])
		if t == "-" || strings.HasPrefix(t, "- ") {
			continue
		}
		if flowEmpty(t) && len(content) == 1 && !pf.had {
			// DSH's template: the block takes the place of its "[]".
			pf.was, pf.at = pf.lines[i], i
			pf.lines = slices.Delete(slices.Clone(pf.lines), i, i+1)
			return pf, nil
		}
		return pf, fmt.Errorf("line %d: %q: the file is %s of patch rows ('- ' at the start of a line), which is all mull can add to; add the rows 'mull dsh install --dry-run' shows by hand, or write the file as '- ' rows", pf.nums[i], t, hintFlowList)
	}
	if !pf.had {
		pf.at = len(pf.lines)
		if n := len(pf.lines); n > 0 && pf.lines[n-1] == "" {
			pf.at = n - 1 // before the final newline
		}
	}
	return pf, nil
}

func flowEmpty(t string) bool {
	t, _, _ = strings.Cut(t, "#")
	return strings.TrimSpace(t) == "[]"
}

// mullID finds the id mull in a row, block or flow style: `- id: mull`,
// `id: "mull"`, `- {id: 'mull', name: …}`.
var mullID = regexp.MustCompile(`(^|[\s{,-])id:\s*["']?mull["']?\s*($|[,}#])`)

// isMullRow: a line that names the id mull.
func isMullRow(t string) bool { return mullID.MatchString(t) }

// withBlock is the file with mull's block (replacing the old one in place).
func (pf patchFile) withBlock(rows []string) ([]byte, error) {
	block := []string{blockHeader}
	if pf.was != "" {
		block = append(block, wasPrefix+pf.was)
	}
	if pf.created {
		block = append(block, createdLine)
	}
	block = append(block, rows...)
	block = append(block, blockEnd)
	lines := slices.Insert(slices.Clone(pf.lines), pf.at, block...)
	// A file without a final newline keeps going without one, so that
	// uninstall gives it back byte for byte.
	return []byte(strings.Join(lines, "\n")), nil
}

// withoutBlock is the file as it was before install; remove says install
// created it and nothing else was added since, so it goes.
func (pf patchFile) withoutBlock() (out []byte, remove bool) {
	lines := slices.Clone(pf.lines)
	if pf.was != "" {
		lines = slices.Insert(lines, pf.at, pf.was)
	}
	s := strings.Join(lines, "\n")
	if pf.created && strings.TrimSpace(s) == "" {
		return nil, true
	}
	return []byte(s), false
}

func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".mull-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// loopbackListen is mull's listen address as DSH on this machine reaches
// it (integrations/dsh's LoopbackListen).
func loopbackListen(listen string) string { return dshplugin.LoopbackListen(listen) }

// checkText refuses what cannot go into a path or a YAML line as it is:
// invalid UTF-8, NUL and other control characters.
func checkText(name, s string) error {
	if problem := events.CheckText(s, 0); problem != "" {
		return usageErr("%s: %s", name, problem)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		return usageErr("%s: %q holds a control character at byte %d", name, s, i)
	}
	return nil
}

func checkBaseURL(u string) error {
	if err := checkText("--url", u); err != nil {
		return err
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("%q is not an http:// or https:// URL", u)
	}
	return nil
}

func mullVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return "mull " + bi.Main.Version
	}
	return "mull (devel)"
}

// findDSH says which DSH installation, if any, this home runs.
func findDSH(home, flag string) dshInstall {
	if flag != "" {
		return readDSHInstall(flag, "--dsh")
	}
	// DSH links the installation it boots from into every home it runs.
	link := filepath.Join(home, "profiles", "node_modules", "@deepseek-ai", "dsh")
	if _, err := os.Stat(link); err == nil {
		if d := readDSHInstall(link, "the installation DSH last booted from this home"); d.err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("dsh"); err == nil {
		if d := readDSHInstall(p, "dsh on PATH"); d.err == nil {
			return d
		}
	}
	return dshInstall{err: errors.New("no DSH installation found")}
}

// dshInstall is one DSH installation: its package directory and version.
type dshInstall struct {
	dir, version, how string
	err               error
}

// readDSHInstall reads DSH's version from its package directory, its
// lib/bin.js, or the dsh command (a link to lib/bin.js).
func readDSHInstall(path, how string) dshInstall {
	d := dshInstall{how: how}
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		d.err = err
		return d
	}
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		p = filepath.Dir(filepath.Dir(p)) // …/lib/bin.js
	}
	b, err := os.ReadFile(filepath.Join(p, "package.json"))
	if err != nil {
		d.err = fmt.Errorf("%s is not DSH's package (%v)", path, err)
		return d
	}
	var m struct{ Name, Version string }
	if err := json.Unmarshal(b, &m); err != nil || m.Name != "@deepseek-ai/dsh" || !semver.IsValid("v"+m.Version) {
		d.err = fmt.Errorf("%s is not DSH's package (@deepseek-ai/dsh)", path)
		return d
	}
	d.dir, d.version = p, m.Version
	return d
}

func (d dshInstall) describe() string {
	if d.err != nil {
		return "DSH version unknown: " + d.err.Error()
	}
	return fmt.Sprintf("DSH %s at %s, %s", d.version, d.dir, d.how)
}

func (d dshInstall) short() string {
	if d.version == "" {
		return "DSH (version unknown)"
	}
	return "DSH " + d.version
}
