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
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// ledgerServer is a server with the negative ledger over s, in mode, and
// the API token "tok" (admin routes: loopback).
func ledgerServer(t *testing.T, s *store.Store, edit ...func(*config.Config)) (*api.Server, *negledger.Service) {
	t.Helper()
	cfg := enginetest.Config()
	cfg.APIToken = "tok"
	for _, e := range edit {
		e(&cfg)
	}
	reg := engine.NewRegistry(nil)
	client := enginetest.NewClient(t, s, reg, cfg, false)
	svc := negledger.New(s, cfg.Ledger, enginetest.Logger())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := api.New(ctx, api.Deps{Store: s, Client: client, Registry: reg, Logger: enginetest.Logger(),
		Config: cfg, Negledger: svc})
	if err != nil {
		t.Fatal(err)
	}
	return srv, svc
}

// The ledger's routes refuse what is not theirs before the service runs:
// no token, an unknown or mistyped field (400 naming it), a bad id,
// status, limit or reason; without a ledger they answer 503.
func TestLedgerRoutesRefuseBadInput(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv, _ := ledgerServer(t, s)
		tok := bearer("tok")
		expect(t, serve(srv, "POST", "/v1/ledger/check", `{}`), http.StatusUnauthorized, nil)
		expect(t, serve(srv, "GET", "/v1/ledger/policy?workspace=/w", ""), http.StatusUnauthorized, nil)
		for _, tc := range []struct{ method, target, body, field string }{
			{"POST", "/v1/ledger/check", `{"tool_call_id":"c1","tool":"bash","bogus":1}`, "bogus"},
			{"POST", "/v1/ledger/observe", `{"tool_call_id":"c1","outcome":{"status":"failed","exit_code":"two"}}`, "outcome.exit_code"},
			{"POST", "/v1/ledger/observe", `{"tool_call_id":"c1","checked_at":"yesterday"}`, "body"},
			{"POST", "/v1/ledger/fs", `{"observations":[{"display_path":"/w/a","size":3}]}`, "size"},
			{"POST", "/v1/ledger/facts", `{"fingerprint":{"kind":"api_unavailable","url":"x"}}`, "url"},
			{"POST", "/v1/ledger/check", `{"tool_call_id":"c1"} {}`, "body"},
			{"GET", "/v1/ledger/policy", ``, "workspace"},
		} {
			var fb fieldBody
			expect(t, serve(srv, tc.method, tc.target, tc.body, tok), http.StatusBadRequest, &fb)
			if fb.Field != tc.field {
				t.Errorf("%s %s %s: field %q (%s), want %q", tc.method, tc.target, tc.body, fb.Field, fb.Error, tc.field)
			}
		}
		for _, tc := range []struct{ method, target, body, field string }{
			{"GET", "/v1/admin/ledger/facts?status=dead", "", "status"},
			{"GET", "/v1/admin/ledger/facts?limit=1001", "", "limit"},
			{"GET", "/v1/admin/ledger/stale?limit=0", "", "limit"},
			{"GET", "/v1/admin/ledger/facts/x1", "", "id"},
			{"POST", "/v1/admin/ledger/facts/0/resolve", `{"reason":"fixed"}`, "id"},
			{"POST", "/v1/admin/ledger/facts/3/resolve", `{}`, "reason"},
			{"POST", "/v1/admin/ledger/facts/3/resolve", `{"reason":"` + strings.Repeat("x", api.MaxResolveReason+1) + `"}`, "reason"},
			{"POST", "/v1/admin/ledger/facts/3/resolve", `{"reason":"fixed","by":"me"}`, "by"},
		} {
			var fb fieldBody
			expect(t, serve(srv, tc.method, tc.target, tc.body), http.StatusBadRequest, &fb)
			if fb.Field != tc.field {
				t.Errorf("%s %s: field %q (%s), want %q", tc.method, tc.target, fb.Field, fb.Error, tc.field)
			}
		}
		var big strings.Builder
		big.WriteString(`{"tool_call_id":"`)
		big.WriteString(strings.Repeat("x", 1<<20))
		big.WriteString(`"}`)
		expect(t, serve(srv, "POST", "/v1/ledger/check", big.String(), tok), http.StatusRequestEntityTooLarge, nil)

		bare, err := api.New(t.Context(), api.Deps{Store: s, Client: enginetest.NewClient(t, s, engine.NewRegistry(nil), enginetest.Config(), false),
			Registry: engine.NewRegistry(nil), Logger: enginetest.Logger(), Config: enginetest.Config()})
		if err != nil {
			t.Fatal(err)
		}
		expectError(t, serve(bare, "POST", "/v1/ledger/check", `{}`), http.StatusServiceUnavailable, "not configured")
		expectError(t, serve(bare, "GET", "/v1/admin/ledger/stats", ""), http.StatusServiceUnavailable, "not configured")
	})
}

// The policy is the workspace's: its mode (an override wins), the tools
// the plugin sends, its timeout in milliseconds.
func TestLedgerPolicy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv, _ := ledgerServer(t, s, func(c *config.Config) {
			c.Ledger.Workspaces = map[string]config.LedgerWorkspace{"/strict": {Mode: "block"}}
		})
		var p negledger.Policy
		expect(t, serve(srv, "GET", "/v1/ledger/policy?workspace=/strict", "", bearer("tok")), http.StatusOK, &p)
		if p.Mode != "block" || strings.Join(p.CommandTools, ",") != "bash,pwsh" || strings.Join(p.ReadTools, ",") != "read" ||
			p.ClientTimeoutMS != 250 {
			t.Errorf("policy of /strict: %+v", p)
		}
		expect(t, serve(srv, "GET", "/v1/ledger/policy?workspace=/other", "", bearer("tok")), http.StatusOK, &p)
		if p.Mode != "warn" {
			t.Errorf("policy of /other: %+v, want the default warn", p)
		}
	})
}
