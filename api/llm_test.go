package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestLLMCallsAndUsage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, "")
		ctx := context.Background()
		now := time.Now().UTC()
		for i, c := range []store.LLMCall{
			{JobID: 1, Kind: "retro_session", Workspace: "/a", Model: "deepseek-v4-flash", PromptTokens: 1000, CacheHitTokens: 640, CacheMissTokens: 360, CompletionTokens: 200, CostNanoUSD: 350000, Outcome: "ok"},
			{JobID: 2, Kind: "retro_session", Workspace: "/b", Model: "deepseek-v4-flash", Outcome: "retryable", ErrorReason: "http_503"},
			{JobID: 3, Kind: "llm_probe", Workspace: "/a", Model: "deepseek-v4-flash", PromptTokens: 50, CacheMissTokens: 50, CompletionTokens: 5, CostNanoUSD: 21000, Outcome: "ok"},
		} {
			c.CreatedAt = now.Add(time.Duration(i) * time.Second)
			if err := s.InsertLLMCall(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		var calls struct {
			Calls []store.LLMCall `json:"calls"`
			Count int             `json:"count"`
		}
		expect(t, f.do("GET", "/v1/admin/llm/calls?workspace=/a", ""), http.StatusOK, &calls)
		if calls.Count != 2 || calls.Calls[0].JobID != 3 || calls.Calls[1].CacheHitTokens != 640 {
			t.Fatalf("calls = %+v", calls)
		}
		expect(t, f.do("GET", "/v1/admin/llm/calls?job=2", ""), http.StatusOK, &calls)
		if calls.Count != 1 || calls.Calls[0].ErrorReason != "http_503" {
			t.Fatalf("calls of job 2 = %+v", calls)
		}
		var usage struct {
			Rows []store.LLMUsageRow `json:"rows"`
		}
		expect(t, f.do("GET", "/v1/admin/llm/usage?by=kind", ""), http.StatusOK, &usage)
		if len(usage.Rows) != 2 || usage.Rows[1].Group != "retro_session" || usage.Rows[1].Calls != 2 || usage.Rows[1].Failed != 1 ||
			usage.Rows[1].CostNanoUSD != 350000 {
			t.Fatalf("usage by kind = %+v", usage.Rows)
		}
		expect(t, f.do("GET", "/v1/admin/llm/usage?by=day", ""), http.StatusOK, &usage)
		if len(usage.Rows) != 1 || usage.Rows[0].Group != now.Format(time.DateOnly) || usage.Rows[0].Calls != 3 {
			t.Fatalf("usage by day = %+v", usage.Rows)
		}
		expectError(t, f.do("GET", "/v1/admin/llm/usage?by=month", ""), http.StatusBadRequest, "by:")
		expectError(t, f.do("GET", "/v1/admin/llm/calls?since=yesterday", ""), http.StatusBadRequest, "since:")
		expectError(t, f.do("GET", "/v1/admin/llm/calls?job=x", ""), http.StatusBadRequest, "job:")

		rec := f.do("GET", "/metrics", "")
		for _, want := range []string{
			`mull_llm_calls_24h{kind="retro_session",outcome="retryable"} 1`,
			`mull_llm_tokens_24h{class="cache_hit",kind="retro_session"} 640`,
			`mull_llm_cost_usd_24h{kind="retro_session"} 0.00035`,
		} {
			if !strings.Contains(rec.Body.String(), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}
