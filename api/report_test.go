package api_test

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/overhead"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestReportOverhead: GET /v1/admin/report/overhead is the CLI's report,
// behind the admin token, with its filters checked; /metrics shows the last
// 24 hours of it per workspace.
func TestReportOverhead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s, "")
		now := time.Now().UTC()
		sctx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		srv, err := api.New(sctx, api.Deps{Store: s, Client: f.c, Registry: f.reg, Logger: enginetest.Logger(),
			AdminToken: "admin-secret", Config: config.Default().WithDefaults(), Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			if _, _, err := s.LockSession(ctx, tx, "session-a", "/a", now); err != nil {
				return err
			}
			_, err := s.InsertEvents(ctx, tx, []store.Event{{ID: "u1", SessionID: "session-a", Workspace: "/a", Type: "usage", Time: now.Add(-time.Hour),
				Payload: []byte(`{"model":"deepseek-v4-flash","input_tokens":1000000,"cache_read_tokens":1000000,"output_tokens":0}`), Source: store.SourcePush}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.InsertLLMCall(ctx, store.LLMCall{Kind: "retro_session", Workspace: "/a", Model: "deepseek-v4-flash", PromptTokens: 100,
			CacheHitTokens: 25, CompletionTokens: 10, CostNanoUSD: 3_000_000, Outcome: "ok", CreatedAt: now.Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}

		if rec := serve(srv, "GET", "/v1/admin/report/overhead", ""); rec.Code != http.StatusUnauthorized {
			t.Fatalf("without the token: %d", rec.Code)
		}
		var r overhead.Report
		expect(t, serve(srv, "GET", "/v1/admin/report/overhead?since=7d", "", bearer("admin-secret")), http.StatusOK, &r)
		agentCost := r.Total.Agent.CostNanoUSD // 0.30 + 0.006 USD at peak, half off-peak
		if len(r.Workspaces) != 1 || r.Total.Agent.Steps != 1 || (agentCost != 306_000_000 && agentCost != 153_000_000) ||
			r.Total.Mull.CostNanoUSD != 3_000_000 || r.Total.Ratio == nil || *r.Total.MullCacheHitShare != 0.25 || r.Since == nil {
			t.Fatalf("report %+v", r)
		}
		expect(t, serve(srv, "GET", "/v1/admin/report/overhead?workspace=/b", "", bearer("admin-secret")), http.StatusOK, &r)
		if len(r.Days) != 0 || r.Total.Agent.Steps != 0 {
			t.Fatalf("another workspace: %+v", r)
		}
		rec := serve(srv, "GET", "/v1/admin/report/overhead?since=last+week", "", bearer("admin-secret"))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "since: want a day") {
			t.Fatalf("a bad since: %d %s", rec.Code, rec.Body)
		}

		var detail struct {
			Title string         `json:"title"`
			Usage overhead.Agent `json:"usage"`
		}
		expect(t, serve(srv, "GET", "/v1/sessions/session-a", ""), http.StatusOK, &detail)
		if detail.Usage.Steps != 1 || detail.Usage.CacheHitTokens != 1_000_000 || detail.Usage.CostNanoUSD != agentCost {
			t.Fatalf("GET /v1/sessions/session-a: %+v", detail)
		}

		rec = serve(srv, "GET", "/metrics", "", bearer("admin-secret"))
		ratio := "0.0196078431372549" // 3e6 / 153e6, off-peak
		if agentCost == 306_000_000 {
			ratio = "0.00980392156862745"
		}
		requireMetrics(t, rec.Body.String(),
			`mull_agent_tokens_24h{class="cache_hit",workspace="/a"} 1e+06`,
			`mull_agent_tokens_24h{class="output",workspace="/a"} 0`,
			`mull_learning_cost_usd_24h{workspace="/a"} 0.003`,
			`mull_overhead_ratio_24h{workspace="/a"} `+ratio,
			`mull_learning_cache_hit_share_24h{workspace="/a"} 0.25`,
		)
	})
}
