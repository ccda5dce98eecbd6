package api

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/overhead"
	"github.com/mullhq/mull/store"
)

// registerOverheadMetrics adds the overhead gauges: the last 24 hours of
// mull report overhead, per workspace, read at scrape time.
func (m *Metrics) registerOverheadMetrics(s *store.Store, pricing llm.Pricing, logger *slog.Logger, now func() time.Time) {
	m.reg.MustRegister(&overheadCollector{store: s, pricing: pricing, logger: logger, now: now})
}

type overheadCollector struct {
	store   *store.Store
	pricing llm.Pricing
	logger  *slog.Logger
	now     func() time.Time
}

var (
	agentTokensDesc = prometheus.NewDesc("mull_agent_tokens_24h",
		"The DSH agent's own tokens in the last 24 hours (its usage events), by workspace and class (cache_hit, cache_miss, output).",
		[]string{"workspace", "class"}, nil)
	agentCostDesc = prometheus.NewDesc("mull_agent_cost_usd_24h",
		"The DSH agent's cost in USD in the last 24 hours, priced with mull's price table, by workspace.", []string{"workspace"}, nil)
	learningCostDesc = prometheus.NewDesc("mull_learning_cost_usd_24h",
		"mull's own LLM cost in USD in the last 24 hours (every job kind), by workspace.", []string{"workspace"}, nil)
	overheadRatioDesc = prometheus.NewDesc("mull_overhead_ratio_24h",
		"mull's LLM cost over the agent's in the last 24 hours, by workspace; absent when the agent cost nothing.", []string{"workspace"}, nil)
	learningCacheDesc = prometheus.NewDesc("mull_learning_cache_hit_share_24h",
		"The share of mull's prompt tokens DeepSeek's prefix cache served in the last 24 hours, by workspace.", []string{"workspace"}, nil)
)

func (c *overheadCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{agentTokensDesc, agentCostDesc, learningCostDesc, overheadRatioDesc, learningCacheDesc} {
		ch <- d
	}
}

func (c *overheadCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := overhead.Build(ctx, c.store, c.pricing, overhead.Filter{Since: c.now().Add(-24 * time.Hour)})
	if err != nil {
		c.logger.Warn("metrics: overhead report", "error", err)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, w := range r.Workspaces {
		a := w.Agent
		gauge(agentTokensDesc, float64(a.CacheHitTokens), w.Workspace, "cache_hit")
		gauge(agentTokensDesc, float64(a.PromptTokens-a.CacheHitTokens), w.Workspace, "cache_miss")
		gauge(agentTokensDesc, float64(a.OutputTokens), w.Workspace, "output")
		gauge(agentCostDesc, float64(a.CostNanoUSD)/1e9, w.Workspace)
		gauge(learningCostDesc, float64(w.Mull.CostNanoUSD)/1e9, w.Workspace)
		if w.Ratio != nil {
			gauge(overheadRatioDesc, *w.Ratio, w.Workspace)
		}
		if w.MullCacheHitShare != nil {
			gauge(learningCacheDesc, *w.MullCacheHitShare, w.Workspace)
		}
	}
}
