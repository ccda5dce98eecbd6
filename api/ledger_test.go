package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/learn/ledger"
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

// The ledger over HTTP, as the plugin and an operator use it: a failure is
// recorded, its repeat is warned about in warn mode and denied before it
// runs in block mode, a replayed check counts nothing twice, the admin
// routes list, show, count and retract, and /metrics reports the answers
// and the three counters.
func TestLedgerRoutesEndToEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv, _ := ledgerServer(t, s, func(c *config.Config) {
			c.Ledger.Workspaces = map[string]config.LedgerWorkspace{"/b": {Mode: "block"}}
		})
		tok := bearer("tok")
		call := func(id, ws string) string {
			return `"tool_call_id":"` + id + `","tool":"bash","args":{"command":"make test"},"cwd":"` + ws + `","session":"s1","workspace":"` + ws + `"`
		}
		var chk negledger.CheckResponse
		expect(t, serve(srv, "POST", "/v1/ledger/check", "{"+call("c1", "/w")+"}", tok), http.StatusOK, &chk)
		if chk.Verdict != ledger.AnswerAllow || chk.Mode != ledger.ModeWarn || chk.FactID != 0 {
			t.Fatalf("first check: %+v", chk)
		}
		var obs negledger.ObserveResponse
		failed := `,"outcome":{"status":"failed","exit_code":2}`
		expect(t, serve(srv, "POST", "/v1/ledger/observe", "{"+call("c1", "/w")+failed+"}", tok), http.StatusOK, &obs)
		if obs.Effect != negledger.EffectRecorded || obs.FactID == 0 {
			t.Fatalf("first failure: %+v", obs)
		}
		fact := obs.FactID
		expect(t, serve(srv, "POST", "/v1/ledger/check", "{"+call("c2", "/w")+"}", tok), http.StatusOK, &chk)
		if chk.Verdict != ledger.AnswerWarn || chk.FactID != fact {
			t.Fatalf("repeat check in warn mode: %+v", chk)
		}
		expect(t, serve(srv, "POST", "/v1/ledger/observe", "{"+call("c2", "/w")+failed+"}", tok), http.StatusOK, &obs)
		if !obs.Duplicate || obs.Note == "" || obs.FactID != fact {
			t.Fatalf("repeat failure in warn mode: %+v", obs)
		}

		expect(t, serve(srv, "POST", "/v1/ledger/observe", "{"+call("c3", "/b")+failed+"}", tok), http.StatusOK, &obs)
		blocked := obs.FactID
		deny := "{" + call("c4", "/b") + "}"
		expect(t, serve(srv, "POST", "/v1/ledger/check", deny, tok), http.StatusOK, &chk)
		if chk.Verdict != ledger.AnswerDeny || chk.FactID != blocked || !strings.HasPrefix(chk.Reason, ledger.DenyPrefix) || chk.RetryAt == nil {
			t.Fatalf("repeat check in block mode: %+v", chk)
		}
		var again negledger.CheckResponse
		expect(t, serve(srv, "POST", "/v1/ledger/check", deny, tok), http.StatusOK, &again)
		if again.Verdict != chk.Verdict || again.Reason != chk.Reason {
			t.Fatalf("replayed check: %+v, first %+v", again, chk)
		}

		var list struct {
			Facts []ledger.Fact `json:"facts"`
		}
		expect(t, serve(srv, "GET", "/v1/admin/ledger/facts?workspace=/w", ""), http.StatusOK, &list)
		if len(list.Facts) != 1 || list.Facts[0].ID != fact || list.Facts[0].Claim != "command exited 2 (bash)" {
			t.Fatalf("facts of /w: %+v", list.Facts)
		}
		var one struct {
			Fact ledger.Fact `json:"fact"`
		}
		expect(t, serve(srv, "GET", "/v1/admin/ledger/facts/"+strconv.FormatInt(fact, 10), ""), http.StatusOK, &one)
		if one.Fact.Savings.DuplicateFailuresObserved != 1 {
			t.Fatalf("fact %d: %+v", fact, one.Fact)
		}
		expectError(t, serve(srv, "GET", "/v1/admin/ledger/facts/999999", ""), http.StatusNotFound, "999999")
		var sum ledger.Summary
		expect(t, serve(srv, "GET", "/v1/admin/ledger/stats?workspace=/b", ""), http.StatusOK, &sum)
		if sum.CallsDenied != 1 || sum.Facts != 1 {
			t.Fatalf("stats of /b: %+v; want the one deny, the replay not counted", sum)
		}
		expect(t, serve(srv, "GET", "/v1/admin/ledger/stale", ""), http.StatusOK, &list)
		if len(list.Facts) != 0 {
			t.Fatalf("stale: %+v", list.Facts)
		}
		expect(t, serve(srv, "POST", "/v1/admin/ledger/facts/"+strconv.FormatInt(blocked, 10)+"/resolve", `{"reason":"  the target was fixed "}`),
			http.StatusOK, &one)
		if one.Fact.Status != ledger.Resolved || one.Fact.LastTransition == nil || one.Fact.LastTransition.Reason != "the target was fixed" {
			t.Fatalf("resolved: %+v", one.Fact)
		}
		expect(t, serve(srv, "POST", "/v1/ledger/check", "{"+call("c5", "/b")+"}", tok), http.StatusOK, &chk)
		if chk.Verdict != ledger.AnswerAllow {
			t.Fatalf("check after a person resolved the fact: %+v", chk)
		}
		var fs negledger.FSResponse
		expect(t, serve(srv, "POST", "/v1/ledger/fs", `{"session":"s1","workspace":"/w","cwd":"/w","observations":[{"display_path":"/w/a.go","observed":"present","version":"v1"}]}`, tok),
			http.StatusOK, &fs)
		if fs.Stored < 1 || fs.Staled == nil {
			t.Fatalf("fs: %+v", fs)
		}

		m := scrape(t, srv)
		for _, want := range []string{`mull_ledger_checks_total{answer="deny"} 2`, `mull_ledger_checks_total{answer="warn"} 1`,
			`mull_ledger_observations_total{effect="recorded"} 2`, "mull_ledger_calls_denied_total 1",
			"mull_ledger_duplicate_failures_observed_total 1", "mull_ledger_facts 2"} {
			if !strings.Contains(m, want+"\n") {
				t.Errorf("/metrics has no %q", want)
			}
		}
	})
}

// A fact that keeps changing under a request (here: every commit of the
// ledger's transaction conflicts) is 503 with Retry-After: 1 after the
// service's 3 rounds.
func TestLedgerConflictIs503(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv, _ := ledgerServer(t, s, func(c *config.Config) {
			c.Ledger.Workspaces = map[string]config.LedgerWorkspace{"/b": {Mode: "block"}}
		})
		tok := bearer("tok")
		call := func(id string) string {
			return `"tool_call_id":"` + id + `","tool":"bash","args":{"command":"make"},"cwd":"/b","session":"s1","workspace":"/b"`
		}
		expect(t, serve(srv, "POST", "/v1/ledger/observe", "{"+call("c1")+`,"outcome":{"status":"failed","exit_code":2}}`, tok), http.StatusOK, nil)
		attempts := 0
		store.SetFailpointError(func(name string) error {
			if name == store.FailpointLedgerCommit {
				attempts++
				return store.ErrLedgerConflict
			}
			return nil
		})
		defer store.SetFailpointError(nil)
		rec := serve(srv, "POST", "/v1/ledger/check", "{"+call("c2")+"}", tok)
		store.SetFailpointError(nil)
		expectError(t, rec, http.StatusServiceUnavailable, "3 rounds")
		if rec.Header().Get("Retry-After") != "1" || attempts != 3 {
			t.Fatalf("Retry-After %q after %d attempts, want 1 after 3", rec.Header().Get("Retry-After"), attempts)
		}
	})
}
