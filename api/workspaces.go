package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/wsconfig"
)

// routesWorkspaces mounts the per-workspace settings (issue 16): the
// agent reads them and switches its scope with the API token; an
// operator sets any of them on the admin route.
func (s *Server) routesWorkspaces() {
	s.mux.Handle("GET /v1/workspaces/{ws}/config", s.apiAuth(s.withWorkspaces(s.getWorkspaceConfig)))
	s.mux.Handle("PUT /v1/workspaces/{ws}/config", s.apiAuth(s.withWorkspaces(s.putWorkspaceScope)))
	s.mux.Handle("GET /v1/admin/workspaces/{ws}/config", s.admin(s.withWorkspaces(s.getWorkspaceConfig)))
	s.mux.Handle("PUT /v1/admin/workspaces/{ws}/config", s.admin(s.withWorkspaces(s.putWorkspaceConfig)))
}

func (s *Server) withWorkspaces(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.deps.Workspaces == nil {
			writeError(w, http.StatusServiceUnavailable, "per-workspace settings are not configured on this server")
			return
		}
		h(w, r)
	}
}

// workspaceConfig is GET's answer, and the admin PUT's.
type workspaceConfig struct {
	Workspace  string           `json:"workspace"`
	Settings   []config.Setting `json:"settings"`
	ConfigFile string           `json:"config_file"`
	How        string           `json:"how"`
}

func (s *Server) answerConfig(w http.ResponseWriter, e config.Effective) {
	ws := s.deps.Workspaces
	writeJSON(w, http.StatusOK, workspaceConfig{Workspace: e.Workspace, Settings: displayKeys(e.Settings),
		ConfigFile: ws.ConfigFile(), How: ws.How(e.Workspace)})
}

// displayKeys names scope by its global key, memory.scope, as the API
// contract shows it (PUT takes either).
func displayKeys(in []config.Setting) []config.Setting {
	out := slices.Clone(in)
	for i := range out {
		if out[i].Key == config.WSScope {
			out[i].Key = "memory.scope"
		}
	}
	return out
}

// pathWorkspace is the {ws} segment (the workspace path, URL-escaped as
// one segment), or a 400 naming it.
func pathWorkspace(w http.ResponseWriter, r *http.Request) (string, bool) {
	ws := r.PathValue("ws")
	if err := wsconfig.CheckWorkspace(ws); err != nil {
		writeConfigError(w, err)
		return "", false
	}
	return ws, true
}

func (s *Server) getWorkspaceConfig(w http.ResponseWriter, r *http.Request) {
	ws, ok := pathWorkspace(w, r)
	if !ok {
		return
	}
	s.answerConfig(w, s.deps.Workspaces.Effective(ws))
}

// putWorkspaceConfig sets any per-workspace key: a partial object whose
// values are strings, numbers or booleans, null clearing a key.
func (s *Server) putWorkspaceConfig(w http.ResponseWriter, r *http.Request) {
	ws, raw, ok := settingsRequest(w, r)
	if !ok {
		return
	}
	changes := map[string]*string{}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v, err := settingText(raw[k])
		if err != nil {
			writeField(w, k, err.Error())
			return
		}
		changes[k] = v
	}
	e, err := s.deps.Workspaces.Set(r.Context(), ws, changes, wsconfig.ByAdmin)
	if err != nil {
		writeConfigError(w, err)
		return
	}
	s.answerConfig(w, e)
}

// putWorkspaceScope is the agent's switch: scope only, answered with what
// becomes hidden.
func (s *Server) putWorkspaceScope(w http.ResponseWriter, r *http.Request) {
	ws, raw, ok := settingsRequest(w, r)
	if !ok {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if k != config.WSScope {
			writeJSON(w, http.StatusForbidden, fieldBody{Field: k,
				Error: k + ": the API token sets only scope; an operator sets " + k + " with PUT /v1/admin/workspaces/{ws}/config or `mull workspaces config set`"})
			return
		}
	}
	var scope string
	if err := json.Unmarshal(raw[config.WSScope], &scope); err != nil || raw[config.WSScope] == nil {
		writeField(w, "scope", `want "workspace", "global" or "both"`)
		return
	}
	out, err := s.deps.Workspaces.SetScope(r.Context(), ws, scope, wsconfig.ByAgent)
	if err != nil {
		writeConfigError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// settingsRequest reads a PUT of a workspace's settings: the {ws} segment
// and a JSON object of settings, or answers 400.
func settingsRequest(w http.ResponseWriter, r *http.Request) (ws string, raw map[string]json.RawMessage, ok bool) {
	if ws, ok = pathWorkspace(w, r); !ok {
		return "", nil, false
	}
	body, ok := readJSONBody(w, r)
	if !ok {
		return "", nil, false
	}
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: want an object of settings, for example {\"scope\": \"global\"}")
		return "", nil, false
	}
	if len(raw) == 0 {
		writeField(w, "settings", "nothing to change: give at least one key (null clears one)")
		return "", nil, false
	}
	return ws, raw, true
}

// settingText is a JSON value as a setting's text: nil for null; a
// string, number or boolean as written.
func settingText(v json.RawMessage) (*string, error) {
	v = bytes.TrimSpace(v)
	switch {
	case string(v) == "null":
		return nil, nil
	case len(v) > 0 && v[0] == '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, err
		}
		return &s, nil
	case len(v) > 0 && (v[0] == '{' || v[0] == '['):
		return nil, errors.New("want a string, number, boolean or null (name nested keys with dots, as digest.quotas.facts)")
	}
	s := string(v)
	return &s, nil
}

// writeConfigError answers a *config.Error as 400 naming its key, anything
// else as 500.
func writeConfigError(w http.ResponseWriter, err error) {
	var e *config.Error
	if errors.As(err, &e) {
		writeField(w, e.Key, strings.TrimSpace(e.Problem))
		return
	}
	writeError(w, http.StatusInternalServerError, err.Error())
}
