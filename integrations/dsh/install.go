package dsh

import (
	"encoding/json"
	"io/fs"
	"net"
	"os"
	"path/filepath"
)

// Rows configure the patch rows that load the plugin in a DSH profile:
// what 'mull dsh install' writes into a profile's cordis.patch.yml, and
// what a benchmark cell run by DSH (jobs/benchcell) writes into its
// throwaway DSH home.
type Rows struct {
	// Entry is the plugin's plugin.mjs as written under the DSH home.
	Entry string
	// BaseURL is where the plugin reaches mull.
	BaseURL string
	// LogTo is the plugin's logTo ("dsh", the default, writes no row;
	// headless DSH keeps its logger's lines in memory only, so "stderr").
	LogTo string
	// HMR turns the hmr row back on (DSH 0.1.0-rc.8 to 0.1.5-rc.2's
	// headless and web bundles disable it, but the launcher needs it).
	HMR bool
	// BenchSnapshot, when set, makes the plugin serve that benchmark
	// snapshot instead of the live memory (a benchmark cell's side).
	BenchSnapshot string
}

// PatchRows are the patch rows of mull's block: the plugin, and the hmr
// row when the profile needs it. Strings are JSON-quoted, which YAML
// reads as double-quoted scalars, so no path can break the YAML.
func PatchRows(o Rows) []string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	rows := []string{
		"# mull's bridge plugin; its config keys: " + q(filepath.Join(filepath.Dir(o.Entry), "README.md")),
		"- insert:",
		"    - id: mull",
		"      name: " + q(o.Entry),
		"      config:",
		"        baseUrl: " + q(o.BaseURL),
	}
	if o.LogTo != "" && o.LogTo != "dsh" {
		rows = append(rows, "        logTo: "+q(o.LogTo)+"   # headless DSH keeps its logger's lines in memory only")
	}
	if o.BenchSnapshot != "" {
		rows = append(rows, "        benchSnapshot: "+q(o.BenchSnapshot)+"   # serve this benchmark snapshot, not the live memory")
	}
	if o.HMR {
		rows = append(rows,
			"# DSH 0.1.0-rc.8 to 0.1.5-rc.2: the bundle disables hmr, but the launcher needs it to watch this file",
			"- id: hmr",
			"  disabled: false",
			"  config: {root: []}")
	}
	return rows
}

// WriteFiles writes the plugin's files (Plugin) under dir, as they are:
// for a DSH home made for one run and removed after it. 'mull dsh install'
// keeps its own list of what it wrote, to update and uninstall.
func WriteFiles(dir string) error {
	return fs.WalkDir(Plugin, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Plugin, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// LoopbackListen is mull's listen address as DSH on this machine reaches
// it: an unspecified host (":7788", "0.0.0.0:7788") becomes 127.0.0.1.
func LoopbackListen(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
