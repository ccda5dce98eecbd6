package config

import (
	"errors"
	"strings"
	"testing"
)

func TestResolveLayers(t *testing.T) {
	def := Settings{WSScope: "workspace", WSRetro: "true", WSQuotaPrefix + "facts": "900"}
	cases := []struct {
		name       string
		l          Layers
		key        string
		want, from string
	}{
		{"default", Layers{Default: def}, WSScope, "workspace", SourceDefault},
		{"global over default", Layers{Global: Settings{WSScope: "both"}, Default: def}, WSScope, "both", SourceGlobalFile},
		{"file over global", Layers{File: Settings{WSScope: "global"}, Global: Settings{WSScope: "both"}, Default: def}, WSScope, "global", SourceWorkspaceFile},
		{"api over file", Layers{API: Settings{WSScope: "both"}, File: Settings{WSScope: "global"}, Default: def}, WSScope, "both", SourceWorkspaceAPI},
		{"env pins over api", Layers{Env: Settings{WSScope: "workspace"}, API: Settings{WSScope: "both"}, Default: def}, WSScope, "workspace", "env MULL_MEMORY_SCOPE"},
		// A cleared API value is a missing key: the file shows through.
		{"cleared api falls through", Layers{API: Settings{}, File: Settings{WSRetro: "false"}, Default: def}, WSRetro, "false", SourceWorkspaceFile},
		{"quota from api", Layers{API: Settings{WSQuotaPrefix + "facts": "100"}, Default: def}, WSQuotaPrefix + "facts", "100", SourceWorkspaceAPI},
		{"quota only in file", Layers{File: Settings{WSQuotaPrefix + "lessons": "50"}, Default: def}, WSQuotaPrefix + "lessons", "50", SourceWorkspaceFile},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Resolve("/w", c.l).Get(c.key)
			if !ok || got.Value != c.want || got.Source != c.from {
				t.Fatalf("%s = %+v (found %v), want %q from %q", c.key, got, ok, c.want, c.from)
			}
		})
	}
}

func TestEffectiveAccessors(t *testing.T) {
	e := Resolve("/w", Layers{API: Settings{WSBudget: "1000", WSRetro: "false"}, Global: Settings{WSQuotaPrefix + "facts": "10"}})
	if n, ok := e.Budget(); !ok || n != 1000 {
		t.Fatalf("budget = %d, %v", n, ok)
	}
	if e.RetroOn() || !e.ReflectionOn() || e.Scope() != "workspace" || e.LedgerMode() != LedgerWarn {
		t.Fatalf("accessors: %+v", e)
	}
	if e.Quotas()["facts"] != 10 {
		t.Fatalf("quotas %v", e.Quotas())
	}
	// A budget from the global layer is the ledger's own business.
	if _, ok := Resolve("/w", Layers{Global: Settings{WSBudget: "5"}}).Budget(); ok {
		t.Fatal("a global budget counted as the workspace's")
	}
}

func TestParseWorkspaceSetting(t *testing.T) {
	good := map[string][2]string{
		"memory.scope=global":   {WSScope, "global"},
		"retro=off":             {"", ""},
		"retro=0":               {WSRetro, "false"},
		"budget= 5000":          {WSBudget, "5000"},
		"ledger.mode=block":     {WSLedgerMode, "block"},
		"digest.quotas.facts=0": {WSQuotaPrefix + "facts", "0"},
	}
	for in, want := range good {
		k, v, _ := strings.Cut(in, "=")
		key, val, err := ParseWorkspaceSetting(k, v)
		if want[0] == "" {
			if err == nil {
				t.Errorf("%s: accepted", in)
			}
			continue
		}
		if err != nil || key != want[0] || val != want[1] {
			t.Errorf("%s = %q %q %v, want %v", in, key, val, err, want)
		}
	}
	for in, wantKey := range map[string]string{
		"scope=local": "scope", "budget=-1": "budget", "ledger.mode=loud": "ledger.mode",
		"digest.quotas.nope=1": "digest.quotas.nope", "digest.quotas.facts=-5": "digest.quotas.facts", "scop=global": "scop",
	} {
		k, v, _ := strings.Cut(in, "=")
		_, _, err := ParseWorkspaceSetting(k, v)
		var e *Error
		if !errors.As(err, &e) || e.Key != wantKey {
			t.Errorf("%s: error %v, want one naming %s", in, err, wantKey)
		}
	}
}

func TestWorkspaceTableInFile(t *testing.T) {
	c, err := ReadFile([]byte(`
[workspaces."/home/u/p"]
scope = "global"
budget = 1000
retro = false
ledger.mode = "block"
digest.quotas.facts = 300
`))
	if err != nil {
		t.Fatal(err)
	}
	s := FileLayer(c, "/home/u/p")
	if s[WSScope] != "global" || s[WSBudget] != "1000" || s[WSRetro] != "false" || s[WSLedgerMode] != "block" || s[WSQuotaPrefix+"facts"] != "300" {
		t.Fatalf("file layer %v", s)
	}
	for src, key := range map[string]string{
		"[workspaces.\"/p\"]\nscope = \"local\"\n":      `workspaces."/p".scope`,
		"[workspaces.\"/p\"]\nscoop = \"global\"\n":     `workspaces."/p".scoop`,
		"[workspaces.\"/p\".digest.quotas]\nnope = 3\n": `workspaces."/p".digest.quotas.nope`,
	} {
		_, err := ReadFile([]byte(src))
		var e *Error
		if !errors.As(err, &e) || e.Key != key {
			t.Errorf("%q: %v, want an error naming %s", src, err, key)
		}
	}
}
