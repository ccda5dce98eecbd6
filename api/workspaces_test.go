package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/wsconfig"
)

// workspacesServer is memoryServer with per-workspace settings: global
// scope workspace, and the API token apiToken.
func workspacesServer(t *testing.T, s *store.Store, environ ...string) (*api.Server, *wsconfig.Service) {
	t.Helper()
	cfg := enginetest.Config()
	cfg.APIToken = apiToken
	ws := wsconfig.NewStatic(s, config.Config{}, environ, enginetest.Logger())
	if err := ws.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	client := enginetest.NewClient(t, s, engine.NewRegistry(nil), cfg, false)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := api.New(ctx, api.Deps{Store: s, Client: client, Registry: engine.NewRegistry(nil), Logger: enginetest.Logger(),
		Config: cfg, Memories: memories.New(s, cfg.Memory, cfg.Digest).WithWorkspaces(ws), Workspaces: ws})
	if err != nil {
		t.Fatal(err)
	}
	return srv, ws
}

type scopeBody struct {
	Scope  struct{ From, To, Source string } `json:"scope"`
	Hidden []struct {
		Library string         `json:"library"`
		Count   int            `json:"count"`
		ByKind  map[string]int `json:"by_kind"`
	} `json:"hidden"`
	Message         string `json:"message"`
	OverriddenByEnv bool   `json:"overridden_by_env"`
}

type configBody struct {
	Workspace string           `json:"workspace"`
	Settings  []config.Setting `json:"settings"`
	How       string           `json:"how"`
}

func (c configBody) get(key string) config.Setting {
	for _, s := range c.Settings {
		if s.Key == key {
			return s
		}
	}
	return config.Setting{}
}

// The agent switches its workspace to global: the answer says what is
// hidden, and that workspace's next digest reads the global library only,
// without a restart, while another workspace's digest is unchanged.
func TestWorkspaceScopeSwitchFollowsNextDigest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv, _ := workspacesServer(t, s)
		auth := bearer(apiToken)
		for _, m := range []string{`{"workspace":"/a","kind":"fact","text":"alpha builds with make"}`,
			`{"workspace":"/a","kind":"lesson","text":"alpha: run the linter first"}`,
			`{"workspace":"/b","kind":"fact","text":"beta builds with bazel"}`} {
			expect(t, serve(srv, "POST", "/v1/memories", m, auth), http.StatusCreated, nil)
		}
		var a, b digestBody
		expect(t, serve(srv, "GET", "/v1/digest?workspace=/a", "", auth), http.StatusOK, &a)
		expect(t, serve(srv, "GET", "/v1/digest?workspace=/b", "", auth), http.StatusOK, &b)
		if !strings.Contains(a.Text, "alpha builds with make") || !strings.Contains(b.Text, "beta builds with bazel") {
			t.Fatalf("digests before: %q / %q", a.Text, b.Text)
		}

		var sw scopeBody
		expect(t, serve(srv, "PUT", "/v1/workspaces/%2Fa/config", `{"scope":"global"}`, auth), http.StatusOK, &sw)
		if sw.Scope.From != "workspace" || sw.Scope.To != "global" || sw.Scope.Source != config.SourceWorkspaceAPI || sw.OverriddenByEnv ||
			len(sw.Hidden) != 1 || sw.Hidden[0].Library != "workspace" || sw.Hidden[0].Count != 2 ||
			sw.Hidden[0].ByKind["fact"] != 1 || sw.Hidden[0].ByKind["lesson"] != 1 ||
			!strings.Contains(sw.Message, "No data was moved") || !strings.Contains(sw.Message, "/mull scope workspace") {
			t.Fatalf("scope switch: %+v", sw)
		}

		var a2, b2 digestBody
		expect(t, serve(srv, "GET", "/v1/digest?workspace=/a", "", auth), http.StatusOK, &a2)
		expect(t, serve(srv, "GET", "/v1/digest?workspace=/b", "", auth), http.StatusOK, &b2)
		if strings.Contains(a2.Text, "alpha builds with make") || a2.ETag == a.ETag {
			t.Fatalf("/a's next digest still reads its own library: %q", a2.Text)
		}
		if b2.ETag != b.ETag || !strings.Contains(b2.Text, "beta builds with bazel") {
			t.Fatalf("/b's digest changed: %q", b2.Text)
		}
		// Under global, /a's memories go to the global library.
		expect(t, serve(srv, "POST", "/v1/memories", `{"workspace":"/a","kind":"fact","text":"gamma is shared"}`, auth), http.StatusCreated, nil)
		var hits struct{ Results []memories.Hit }
		expect(t, serve(srv, "GET", "/v1/memories/search?workspace=/a&q=alpha", "", auth), http.StatusOK, &hits)
		if len(hits.Results) != 0 {
			t.Fatalf("search under global found /a's own library: %+v", hits)
		}

		// Back to workspace: the memories were never moved.
		expect(t, serve(srv, "PUT", "/v1/workspaces/%2Fa/config", `{"scope":"workspace"}`, auth), http.StatusOK, &sw)
		if len(sw.Hidden) != 1 || sw.Hidden[0].Library != "global" || sw.Hidden[0].Count != 1 {
			t.Fatalf("switch back: %+v", sw)
		}
		expect(t, serve(srv, "GET", "/v1/digest?workspace=/a", "", auth), http.StatusOK, &a2)
		if !strings.Contains(a2.Text, "alpha builds with make") {
			t.Fatalf("/a's library did not come back: %q", a2.Text)
		}

		// A quota of /a's re-renders /a's next digest under it (a section's
		// first entry is always shown: one fact of two fits); /b's stays.
		before := a2.ETag
		expect(t, serve(srv, "POST", "/v1/memories", `{"workspace":"/a","kind":"fact","text":"alpha ships a docker image"}`, auth), http.StatusCreated, nil)
		expect(t, serve(srv, "PUT", "/v1/admin/workspaces/%2Fa/config", `{"digest.quotas.facts": 1}`), http.StatusOK, nil)
		expect(t, serve(srv, "GET", "/v1/digest?workspace=/a", "", auth), http.StatusOK, &a2)
		expect(t, serve(srv, "GET", "/v1/digest?workspace=/b", "", auth), http.StatusOK, &b2)
		if strings.Contains(a2.Text, "alpha builds with make") == strings.Contains(a2.Text, "alpha ships a docker image") ||
			!strings.Contains(a2.Text, "alpha: run the linter first") || a2.ETag == before {
			t.Fatalf("/a's digest under a 1-character facts quota: %q", a2.Text)
		}
		if b2.ETag != b.ETag {
			t.Fatalf("/b's digest changed with /a's quota: %q", b2.Text)
		}
	})
}

func TestWorkspaceConfigRoutes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv, _ := workspacesServer(t, s)
		auth := bearer(apiToken)
		var c configBody
		expect(t, serve(srv, "GET", "/v1/workspaces/%2Fw/config", "", auth), http.StatusOK, &c)
		if c.Workspace != "/w" || c.get("memory.scope").Source != config.SourceDefault || !strings.Contains(c.How, "[workspaces.") {
			t.Fatalf("GET: %+v", c)
		}
		expect(t, serve(srv, "GET", "/v1/workspaces/%2Fw/config", ""), http.StatusUnauthorized, nil)

		// The API token sets scope only.
		var fb fieldBody
		expect(t, serve(srv, "PUT", "/v1/workspaces/%2Fw/config", `{"scope":"both","budget":10}`, auth), http.StatusForbidden, &fb)
		if fb.Field != "budget" || !strings.Contains(fb.Error, "/v1/admin/workspaces/{ws}/config") {
			t.Fatalf("agent budget: %+v", fb)
		}
		expect(t, serve(srv, "PUT", "/v1/workspaces/%2Fw/config", `{"scope":"local"}`, auth), http.StatusBadRequest, &fb)
		if fb.Field != "scope" {
			t.Fatalf("bad scope: %+v", fb)
		}
		// A workspace is a DSH cwd as written: not relative, no trailing
		// slash, no "..": such a setting would never apply.
		for _, ws := range []string{"w", "%2Fw%2F", "%2Fa%2F..%2Fw"} {
			expect(t, serve(srv, "PUT", "/v1/workspaces/"+ws+"/config", `{"scope":"both"}`, auth), http.StatusBadRequest, &fb)
			if fb.Field != "workspace" || !strings.Contains(fb.Error, "absolute, clean path") {
				t.Fatalf("workspace %s: %+v", ws, fb)
			}
		}

		// The admin's PUT: partial, all or nothing, null clears.
		expect(t, serve(srv, "PUT", "/v1/admin/workspaces/%2Fw/config", `{"scope":"both","budget":5000,"retro":false,"ledger.mode":"block","digest.quotas.facts":300}`), http.StatusOK, &c)
		for key, want := range map[string]string{"memory.scope": "both", "budget": "5000", "retro": "false", "ledger.mode": "block", "digest.quotas.facts": "300"} {
			if got := c.get(key); got.Value != want || got.Source != config.SourceWorkspaceAPI {
				t.Fatalf("%s = %+v, want %s from the api", key, got, want)
			}
		}
		for body, field := range map[string]string{
			`{"scope":"global","budget":-1}`:           "budget",
			`{"scope":"global","ledger.mode":"loud"}`:  "ledger.mode",
			`{"retro":"maybe"}`:                        "retro",
			`{"scope":"global","colour":"red"}`:        "colour",
			`{"digest.quotas.nope":3}`:                 "digest.quotas.nope",
			`{"digest":{"quotas":{"facts":3}}}`:        "digest",
			`{"scope":"global","memory.scope":"both"}`: "scope",
		} {
			expect(t, serve(srv, "PUT", "/v1/admin/workspaces/%2Fw/config", body), http.StatusBadRequest, &fb)
			if fb.Field != field {
				t.Fatalf("%s: field %q, want %q (%s)", body, fb.Field, field, fb.Error)
			}
		}
		expect(t, serve(srv, "GET", "/v1/workspaces/%2Fw/config", "", auth), http.StatusOK, &c)
		if c.get("memory.scope").Value != "both" || c.get("budget").Value != "5000" {
			t.Fatalf("a refused PUT stored something: %+v", c)
		}
		expect(t, serve(srv, "PUT", "/v1/admin/workspaces/%2Fw/config", `{"scope":null,"budget":null}`), http.StatusOK, &c)
		if got := c.get("memory.scope"); got.Value != "workspace" || got.Source != config.SourceDefault {
			t.Fatalf("cleared scope: %+v", got)
		}
		if got := c.get("budget"); got.Source != config.SourceDefault {
			t.Fatalf("cleared budget: %+v", got)
		}
		// Not from loopback without an admin token: refused.
		expect(t, serve(srv, "PUT", "/v1/admin/workspaces/%2Fw/config", `{"scope":"both"}`, from("192.0.2.1:1")), http.StatusForbidden, nil)
	})
}

// MULL_MEMORY_SCOPE pins the scope: the agent's switch is stored, and the
// answer says the variable wins.
func TestWorkspaceScopePinnedByEnv(t *testing.T) {
	s := storetest.New(t, store.SQLite)
	srv, ws := workspacesServer(t, s, "MULL_MEMORY_SCOPE=workspace")
	var sw scopeBody
	expect(t, serve(srv, "PUT", "/v1/workspaces/%2Fw/config", `{"scope":"global"}`, bearer(apiToken)), http.StatusOK, &sw)
	if !sw.OverriddenByEnv || len(sw.Hidden) != 0 || !strings.Contains(sw.Message, "MULL_MEMORY_SCOPE") || sw.Scope.Source != "env MULL_MEMORY_SCOPE" {
		t.Fatalf("pinned: %+v", sw)
	}
	if e := ws.Effective("/w"); e.Scope() != "workspace" {
		t.Fatalf("effective scope %s", e.Scope())
	}
}
