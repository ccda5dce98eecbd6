// Package wsconfig serves each workspace's effective settings (issue 16):
// the config file's [workspaces."<path>"] tables, the values set through
// the API (the workspace_settings table), the global keys and the
// environment, resolved by config.Resolve. Every reader (the digest, the
// retro and reflection jobs, the budget ledger, the negative ledger) asks
// it at use time, so a change applies to the next digest or job without a
// restart.
//
// Reads never touch the database: the API's rows are held in memory,
// replaced on every write through this service and reloaded on every
// watcher tick (Run), so a write made by another process sharing the
// database applies here within one tick. That makes Effective safe to call
// inside a transaction (SQLite's one connection).
package wsconfig

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
)

// Who set an API value (workspace_settings.updated_by).
const (
	ByAdmin = "admin"
	ByAgent = "agent"
	ByCLI   = "cli"
)

// Service resolves workspaces' settings. Build one in main and share it.
type Service struct {
	store *store.Store
	log   *slog.Logger
	src   config.Source
	file  atomic.Pointer[fileState]

	mu sync.RWMutex
	// loadMu serializes Load's read and store.
	loadMu sync.Mutex
	api    map[string]config.Settings

	// watch is the file's last seen state (watch.go).
	watchMu sync.Mutex
	seen    stamp
	// refused is the last problem logged, so a file that stays missing
	// or bad is reported once, not on every tick.
	refused string
}

// fileState is the last good config file: its raw tables and the layers
// below the workspace ones.
type fileState struct {
	raw              config.Config
	env, global, def config.Settings
}

// New builds the service over s for the configuration src (file, environ)
// that was loaded at startup; it reads the file once. Call Load before
// serving.
func New(s *store.Store, src config.Source, log *slog.Logger) (*Service, error) {
	svc := &Service{store: s, log: log.With("component", "wsconfig"), src: src, api: map[string]config.Settings{}}
	if _, err := svc.Check(); err != nil {
		return nil, err
	}
	return svc, nil
}

// NewStatic is a service over an already loaded file config raw (tests and
// commands that do not watch).
func NewStatic(s *store.Store, raw config.Config, environ []string, log *slog.Logger) *Service {
	svc := &Service{store: s, log: log.With("component", "wsconfig"), src: config.Source{Environ: environ}, api: map[string]config.Settings{}}
	svc.setFile(raw)
	return svc
}

func (s *Service) setFile(raw config.Config) {
	env, global, def := config.GlobalLayers(raw, s.src.Environ)
	s.file.Store(&fileState{raw: raw, env: env, global: global, def: def})
}

// ConfigFile is the watched file's path ("" none).
func (s *Service) ConfigFile() string { return s.src.File }

// Load reads the API's settings from the database.
func (s *Service) Load(ctx context.Context) error {
	// One load at a time: two that read and store out of order (a Set's
	// and a watcher tick's) would put the older rows back.
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	rows, err := s.store.WorkspaceSettings(ctx, s.store.DB)
	if err != nil {
		return err
	}
	api := map[string]config.Settings{}
	for _, r := range rows {
		if api[r.Workspace] == nil {
			api[r.Workspace] = config.Settings{}
		}
		api[r.Workspace][r.Key] = r.Value
	}
	s.mu.Lock()
	s.api = api
	s.mu.Unlock()
	return nil
}

// Effective is workspace's settings now. It reads no database.
func (s *Service) Effective(workspace string) config.Effective {
	f := s.file.Load()
	s.mu.RLock()
	api := maps.Clone(s.api[workspace])
	s.mu.RUnlock()
	return config.Resolve(workspace, config.Layers{Env: f.env, API: api, File: config.FileLayer(f.raw, workspace),
		Global: f.global, Default: f.def})
}

// Set applies changes to workspace's API values, all or nothing: a key
// with a value sets it, a nil value clears it back to the lower layers.
// Keys may be memory.scope or scope. A bad workspace, key or value is a
// *config.Error naming it, and nothing is stored.
func (s *Service) Set(ctx context.Context, workspace string, changes map[string]*string, by string) (config.Effective, error) {
	if err := CheckWorkspace(workspace); err != nil {
		return config.Effective{}, err
	}
	if len(changes) == 0 {
		return config.Effective{}, &config.Error{Key: "settings", Problem: "nothing to change: give at least one key (null clears one)"}
	}
	set, clear := map[string]string{}, []string{}
	for _, name := range slices.Sorted(maps.Keys(changes)) {
		v := changes[name]
		key, err := config.WorkspaceKey(name)
		if err != nil {
			return config.Effective{}, err
		}
		if _, dup := set[key]; dup || slices.Contains(clear, key) {
			return config.Effective{}, &config.Error{Key: name, Problem: "given twice (memory.scope is scope)"}
		}
		if v == nil {
			clear = append(clear, key)
			continue
		}
		if _, set[key], err = config.ParseWorkspaceSetting(key, *v); err != nil {
			return config.Effective{}, err
		}
	}
	now := s.store.Now()
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		for _, k := range slices.Sorted(maps.Keys(set)) {
			if err := s.store.PutWorkspaceSetting(ctx, tx, store.WorkspaceSetting{Workspace: workspace, Key: k, Value: set[k], UpdatedAt: now, UpdatedBy: by}); err != nil {
				return err
			}
		}
		for _, k := range clear {
			if err := s.store.DeleteWorkspaceSetting(ctx, tx, workspace, k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return config.Effective{}, err
	}
	if err := s.Load(ctx); err != nil {
		return config.Effective{}, err
	}
	s.log.Info("workspace settings changed", "workspace", workspace, "set", set, "cleared", clear, "by", by)
	return s.Effective(workspace), nil
}

// CheckWorkspace refuses a workspace path no DSH cwd can be: empty, too
// long, or holding control characters.
func CheckWorkspace(ws string) error {
	switch {
	case strings.TrimSpace(ws) == "":
		return &config.Error{Key: "workspace", Problem: "must not be empty"}
	case len(ws) > 4096:
		return &config.Error{Key: "workspace", Problem: fmt.Sprintf("too long (%d bytes > 4096)", len(ws))}
	case strings.ContainsFunc(ws, unicode.IsControl):
		return &config.Error{Key: "workspace", Problem: "holds a control character"}
	case !filepath.IsAbs(ws) || filepath.Clean(ws) != ws:
		// A workspace is DSH's cwd, matched as written: a relative path,
		// a trailing slash or a ".." would name a workspace no session has,
		// and the setting would silently never apply.
		return &config.Error{Key: "workspace", Problem: fmt.Sprintf("%q is not an absolute, clean path (a DSH cwd, such as %q)", ws, cleanAbs(ws))}
	}
	return nil
}

// How is one line saying where these settings are changed.
func (s *Service) How(workspace string) string {
	file := "the config file"
	if s.src.File != "" {
		file = s.src.File
	}
	return fmt.Sprintf("set them in %s under [workspaces.%q], with PUT /v1/admin/workspaces/{ws}/config (null clears a key), or `mull workspaces config set %s key=value`; MULL_MEMORY_SCOPE and MULL_LEDGER_MODE pin theirs for every workspace",
		file, workspace, shellQuote(workspace))
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t'\"\\$`!*?[]{}();&|<>~#") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cleanAbs is ws as an absolute, clean path, for an error's example.
func cleanAbs(ws string) string {
	if !filepath.IsAbs(ws) {
		return filepath.Join("/home/you", ws)
	}
	return filepath.Clean(ws)
}
