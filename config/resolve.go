package config

// resolve.go is the one place a workspace's settings are resolved: pure,
// no SQL and no HTTP, so every layer's precedence is table-tested.

import (
	"slices"
	"strconv"
	"strings"
)

// Layers are the places a workspace's settings come from, highest first:
// the environment (which pins a key for every workspace), the API's
// workspace_settings rows, the file's [workspaces."<path>"] table, the
// file's global keys, and the defaults.
type Layers struct {
	// Env holds the keys an environment variable sets (EnvFor).
	Env     Settings
	API     Settings
	File    Settings
	Global  Settings
	Default Settings
}

// Setting is one effective per-workspace value and the layer it came from.
type Setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Effective is a workspace's settings once the layers are resolved.
type Effective struct {
	Workspace string    `json:"workspace"`
	Settings  []Setting `json:"settings"`
}

// Resolve gives each per-workspace key its value from the highest layer
// that has one: env > workspace (api) > workspace (file) > global (file) >
// default. A key no layer has is left out (budget without any limit). It
// is pure: every caller that needs a workspace's settings goes through it.
func Resolve(workspace string, l Layers) Effective {
	keys := slices.Clone(WorkspaceKeys)
	for _, k := range quotaKeys() {
		for _, layer := range []Settings{l.Env, l.API, l.File, l.Global, l.Default} {
			if _, ok := layer[k]; ok {
				keys = append(keys, k)
				break
			}
		}
	}
	out := Effective{Workspace: workspace, Settings: []Setting{}}
	for _, k := range keys {
		layers := []struct {
			s      Settings
			source string
		}{{l.Env, "env " + EnvFor(k)}, {l.API, SourceWorkspaceAPI}, {l.File, SourceWorkspaceFile},
			{l.Global, SourceGlobalFile}, {l.Default, SourceDefault}}
		for _, layer := range layers {
			if v, ok := layer.s[k]; ok {
				out.Settings = append(out.Settings, Setting{Key: k, Value: v, Source: layer.source})
				break
			}
		}
	}
	return out
}

// Get is key's effective setting; ok is false when no layer has it.
func (e Effective) Get(key string) (Setting, bool) {
	for _, s := range e.Settings {
		if s.Key == key {
			return s, true
		}
	}
	return Setting{}, false
}

func (e Effective) value(key string) string {
	s, _ := e.Get(key)
	return s.Value
}

// Scope is the workspace's memory scope (workspace when unset).
func (e Effective) Scope() string {
	if v := e.value(WSScope); v != "" {
		return v
	}
	return "workspace"
}

// LedgerMode is the workspace's ledger mode (warn when unset).
func (e Effective) LedgerMode() string {
	if v := e.value(WSLedgerMode); v != "" {
		return v
	}
	return LedgerWarn
}

// RetroOn reports whether the workspace's retros run (unset: on).
func (e Effective) RetroOn() bool { return e.value(WSRetro) != "false" }

// ReflectionOn reports whether the workspace's reflect_task jobs run
// (unset: on).
func (e Effective) ReflectionOn() bool { return e.value(WSReflection) != "false" }

// Budget is the workspace's own daily token budget; ok is false unless a
// workspace layer (api or file) sets it, when the budget ledger's own
// limits (budget.limits, `mull budget set`) apply.
func (e Effective) Budget() (tokens int64, ok bool) {
	s, found := e.Get(WSBudget)
	if !found || s.Source != SourceWorkspaceAPI && s.Source != SourceWorkspaceFile {
		return 0, false
	}
	n, err := strconv.ParseInt(s.Value, 10, 64)
	return n, err == nil
}

// Quotas are the digest's quotas by section under these settings.
func (e Effective) Quotas() map[string]int {
	q := map[string]int{}
	for _, s := range e.Settings {
		if sec, ok := strings.CutPrefix(s.Key, WSQuotaPrefix); ok {
			if n, err := strconv.Atoi(s.Value); err == nil {
				q[sec] = n
			}
		}
	}
	return q
}
