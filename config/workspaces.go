package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// WorkspaceConfig is one [workspaces."<path>"] table: the settings one
// workspace (a DSH cwd) has of its own in the config file. An unset key
// falls through to the global setting. The same keys can be set through
// the API (PUT /v1/admin/workspaces/{ws}/config), which wins over the file.
type WorkspaceConfig struct {
	// Scope is this workspace's memory.scope: workspace, global or both.
	Scope string `toml:"scope"`
	// Budget is the daily token budget of this workspace's LLM jobs (its
	// "workspace:<path>" budget key); 0 is no limit. Unset: budget.limits.
	Budget *int64 `toml:"budget"`
	// Retro turns this workspace's retros (retro_session, retro_error) on
	// or off. Unset: on.
	Retro *bool `toml:"retro"`
	// Reflection turns this workspace's reflect_task jobs on or off.
	// Unset: on.
	Reflection *bool `toml:"reflection"`
	// Ledger holds this workspace's ledger.mode.
	Ledger LedgerWorkspace `toml:"ledger"`
	// Digest holds this workspace's digest.quotas.
	Digest WorkspaceDigest `toml:"digest"`
}

// WorkspaceDigest is a workspace's digest.quotas, by section.
type WorkspaceDigest struct {
	Quotas map[string]int `toml:"quotas"`
}

// The per-workspace setting keys: what the [workspaces."<path>"] table,
// the API and `mull workspaces config set` name.
const (
	WSScope      = "scope"
	WSBudget     = "budget"
	WSRetro      = "retro"
	WSReflection = "reflection"
	WSLedgerMode = "ledger.mode"
	// WSQuotaPrefix starts a digest quota's key: digest.quotas.<section>.
	WSQuotaPrefix = "digest.quotas."
)

// WorkspaceKeys are the fixed per-workspace keys; each digest section adds
// WSQuotaPrefix+section.
var WorkspaceKeys = []string{WSScope, WSBudget, WSRetro, WSReflection, WSLedgerMode}

// The layers a per-workspace setting comes from, in order of precedence.
const (
	SourceWorkspaceAPI  = "workspace (api)"
	SourceWorkspaceFile = "workspace (file)"
	SourceGlobalFile    = "global (file)"
	SourceDefault       = "default"
)

// wsEnv are the environment variables that pin a per-workspace key for
// every workspace (the global key's variable).
var wsEnv = map[string]string{WSScope: "MULL_MEMORY_SCOPE", WSLedgerMode: "MULL_LEDGER_MODE"}

// EnvFor is the variable that pins a per-workspace key, or "".
func EnvFor(key string) string { return wsEnv[key] }

// WorkspaceKey is the canonical per-workspace key of name (memory.scope is
// scope), or an *Error naming it when it is none.
func WorkspaceKey(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "memory.scope" {
		return WSScope, nil
	}
	if slices.Contains(WorkspaceKeys, name) {
		return name, nil
	}
	if sec, ok := strings.CutPrefix(name, WSQuotaPrefix); ok {
		if slices.Contains(DigestSections, sec) {
			return name, nil
		}
		return "", bad(name, "no such digest section (sections: %s)", strings.Join(DigestSections, ", "))
	}
	problem := "not a per-workspace setting (settings: " + strings.Join(WorkspaceKeys, ", ") + ", " + WSQuotaPrefix + "<section>)"
	if s := nearest(name, append(slices.Clone(WorkspaceKeys), quotaKeys()...)); s != "" {
		problem = "not a per-workspace setting (did you mean " + s + "?)"
	}
	return "", &Error{Key: name, Problem: problem}
}

func quotaKeys() []string {
	out := make([]string, len(DigestSections))
	for i, s := range DigestSections {
		out[i] = WSQuotaPrefix + s
	}
	return out
}

// ParseWorkspaceSetting checks one per-workspace value with the rules the
// global key has and returns it in canonical text (true/false, a whole
// number, the mode). A bad key or value is an *Error naming the key.
func ParseWorkspaceSetting(name, value string) (key, canonical string, err error) {
	key, err = WorkspaceKey(name)
	if err != nil {
		return "", "", err
	}
	value = strings.TrimSpace(value)
	var e *Error
	switch {
	case key == WSScope:
		e = Memory{Scope: value}.validateErr()
	case key == WSLedgerMode:
		if !slices.Contains(LedgerModes, value) {
			e = bad(key, "%q is not one of off, warn, block", value)
		}
	case key == WSRetro, key == WSReflection:
		b, perr := strconv.ParseBool(value)
		if perr != nil {
			return "", "", bad(key, "%q is not true or false (on/off: true turns it on)", value)
		}
		value = strconv.FormatBool(b)
	case key == WSBudget:
		n, perr := strconv.ParseInt(value, 10, 64)
		if perr != nil || n < 0 {
			return "", "", bad(key, "%q is not a whole number of tokens ≥ 0 (0: no limit)", value)
		}
		value = strconv.FormatInt(n, 10)
	default: // a digest quota: the global rule of [digest.quotas]
		n, perr := strconv.Atoi(value)
		if perr != nil {
			return "", "", bad(key, "%q is not a whole number of characters", value)
		}
		d := Default().Digest
		d.Quotas = map[string]int{strings.TrimPrefix(key, WSQuotaPrefix): n}
		if verr := d.validate(); verr != nil {
			e = &Error{Key: key, Problem: verr.(*Error).Problem}
		}
		value = strconv.Itoa(n)
	}
	if e != nil {
		return "", "", &Error{Key: key, Problem: e.Problem}
	}
	return key, value, nil
}

func (m Memory) validateErr() *Error {
	if err := m.validate(); err != nil {
		return err.(*Error)
	}
	return nil
}

// Settings is one layer's per-workspace values: canonical key to
// canonical text (ParseWorkspaceSetting). A key it lacks falls through.
type Settings map[string]string

// Settings gives the file table's values as one layer.
func (w WorkspaceConfig) Settings() Settings {
	s := Settings{}
	if w.Scope != "" {
		s[WSScope] = w.Scope
	}
	if w.Budget != nil {
		s[WSBudget] = strconv.FormatInt(*w.Budget, 10)
	}
	if w.Retro != nil {
		s[WSRetro] = strconv.FormatBool(*w.Retro)
	}
	if w.Reflection != nil {
		s[WSReflection] = strconv.FormatBool(*w.Reflection)
	}
	if w.Ledger.Mode != "" {
		s[WSLedgerMode] = w.Ledger.Mode
	}
	for sec, n := range w.Digest.Quotas {
		s[WSQuotaPrefix+sec] = strconv.Itoa(n)
	}
	return s
}

// validateWorkspaces checks every [workspaces."<path>"] table with the
// rules of the global keys.
func (c Config) validateWorkspaces() error {
	for _, ws := range slices.Sorted(maps.Keys(c.Workspaces)) {
		prefix := "workspaces." + strconv.Quote(ws) + "."
		if strings.TrimSpace(ws) == "" {
			return bad("workspaces", "a table needs a workspace path, got %q", ws)
		}
		set := c.Workspaces[ws].Settings()
		for _, k := range slices.Sorted(maps.Keys(set)) {
			if _, _, err := ParseWorkspaceSetting(k, set[k]); err != nil {
				return &Error{Key: prefix + k, Problem: err.(*Error).Problem}
			}
		}
	}
	return nil
}

// GlobalLayers are the layers of c (loaded, with defaults) below the
// workspace ones: env is what environ pins, global what the file (raw,
// before defaults and env) sets, default what Default() has.
func GlobalLayers(file Config, environ []string) (env, global, def Settings) {
	env, global, def = Settings{}, Settings{}, Settings{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		for key, name := range wsEnv {
			if k == name {
				env[key] = v
			}
		}
	}
	if file.Memory.Scope != "" {
		global[WSScope] = file.Memory.Scope
	}
	if file.Ledger.Mode != "" {
		global[WSLedgerMode] = file.Ledger.Mode
	}
	if lim, ok := file.Budget.Limits["workspace:*"]; ok {
		global[WSBudget] = strconv.FormatInt(lim.Tokens, 10)
	}
	for sec, n := range file.Digest.Quotas {
		global[WSQuotaPrefix+sec] = strconv.Itoa(n)
	}
	d := Default()
	def[WSScope], def[WSLedgerMode] = d.Memory.Scope, d.Ledger.Mode
	def[WSRetro], def[WSReflection] = "true", "true"
	def[WSBudget] = strconv.FormatInt(d.Budget.Limits["workspace:*"].Tokens, 10)
	for sec, n := range d.Digest.Quotas {
		def[WSQuotaPrefix+sec] = strconv.Itoa(n)
	}
	return env, global, def
}

// FileLayer is workspace's table of the file, with its older
// [ledger.workspaces."<path>"] mode when the table sets none.
func FileLayer(file Config, workspace string) Settings {
	s := file.Workspaces[workspace].Settings()
	if _, ok := s[WSLedgerMode]; !ok {
		if w, ok := file.Ledger.Workspaces[workspace]; ok && w.Mode != "" {
			s[WSLedgerMode] = w.Mode
		}
	}
	return s
}

// ReadFile decodes a config file as it is, without defaults or the
// environment: the file layers of the per-workspace settings. It rejects
// unknown keys and checks the file's workspace tables.
func ReadFile(b []byte) (Config, error) {
	var c Config
	if err := decodeTOML(b, &c); err != nil {
		return Config{}, err
	}
	if err := c.validateWorkspaces(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// String is a setting as key=value (source).
func (s Setting) String() string { return fmt.Sprintf("%s=%s (%s)", s.Key, s.Value, s.Source) }
