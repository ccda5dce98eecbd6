package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/riverqueue/river"

	"github.com/mullhq/mull/store"
)

// Metrics holds mull's Prometheus collectors: job counts read from the
// database at scrape time (so every process reports the shared queue), and
// attempts and run durations counted from this process's River events.
type Metrics struct {
	reg       *prometheus.Registry
	attempts  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	logger    *slog.Logger
}

// NewMetrics registers the collectors on a fresh registry.
func NewMetrics(s *store.Store, logger *slog.Logger) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mull_job_attempts_total",
			Help: "Job attempts worked by this process, by kind and outcome (completed, failed, discarded, cancelled, snoozed).",
		}, []string{"kind", "outcome"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mull_job_run_duration_seconds",
			Help:    "How long one job attempt ran, by kind and outcome.",
			Buckets: []float64{.005, .025, .1, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		}, []string{"kind", "outcome"}),
		logger: logger,
	}
	m.reg.MustRegister(m.attempts, m.durations, &jobCollector{store: s, logger: logger},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Consume counts River events until the channel closes.
func (m *Metrics) Consume(events <-chan *river.Event) {
	for ev := range events {
		if ev.Job == nil {
			continue
		}
		outcome := string(ev.Job.State)
		switch ev.Kind {
		case river.EventKindJobFailed:
			if ev.Job.State != "discarded" {
				outcome = "failed"
			}
		case river.EventKindJobSnoozed:
			outcome = "snoozed"
		}
		m.attempts.WithLabelValues(ev.Job.Kind, outcome).Inc()
		if ev.JobStats != nil {
			m.durations.WithLabelValues(ev.Job.Kind, outcome).Observe(ev.JobStats.RunDuration.Seconds())
		}
	}
}

// MetricEvents are the River events Consume wants.
var MetricEvents = []river.EventKind{
	river.EventKindJobCompleted, river.EventKindJobFailed,
	river.EventKindJobCancelled, river.EventKindJobSnoozed,
}

// jobCollector reads job counts by kind and state at scrape time.
type jobCollector struct {
	store  *store.Store
	logger *slog.Logger
}

var (
	jobsDesc = prometheus.NewDesc("mull_jobs",
		"Jobs in the database by kind, queue and state.", []string{"kind", "queue", "state"}, nil)
	deadDesc = prometheus.NewDesc("mull_dead_letters",
		"Dead letters kept for an operator, by kind: discarded jobs (attempts exhausted) and jobs cancelled with an error (permanent failures).", []string{"kind"}, nil)
	llmCallsDesc = prometheus.NewDesc("mull_llm_calls_24h",
		"LLM calls in the last 24 hours by job kind and outcome (ok, retryable, permanent, pause, budget, invalid; running while in flight, lost when the worker died mid-call).",
		[]string{"kind", "outcome"}, nil)
	llmTokensDesc = prometheus.NewDesc("mull_llm_tokens_24h",
		"LLM tokens in the last 24 hours by job kind and class (cache_hit, cache_miss, completion).",
		[]string{"kind", "class"}, nil)
	llmCostDesc = prometheus.NewDesc("mull_llm_cost_usd_24h",
		"LLM cost in USD in the last 24 hours by job kind.", []string{"kind"}, nil)
	upDesc = prometheus.NewDesc("mull_database_up",
		"1 when the job counts could be read from the database.", nil, nil)
)

func (c *jobCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- deadDesc
	ch <- upDesc
	ch <- llmCallsDesc
	ch <- llmTokensDesc
	ch <- llmCostDesc
}

func (c *jobCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.store.JobCounts(ctx)
	if err != nil {
		c.logger.Warn("metrics: count jobs", "error", err)
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	dead, err := c.store.DeadLetterCounts(ctx)
	if err != nil {
		c.logger.Warn("metrics: count dead letters", "error", err)
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	for _, jc := range counts {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(jc.N), jc.Kind, jc.Queue, jc.State)
	}
	for kind, n := range dead {
		ch <- prometheus.MustNewConstMetric(deadDesc, prometheus.GaugeValue, float64(n), kind)
	}
	c.collectLLM(ctx, ch)
}

func (c *jobCollector) collectLLM(ctx context.Context, ch chan<- prometheus.Metric) {
	calls, err := c.store.CountLLMCalls(ctx, time.Now().Add(-24*time.Hour))
	if err != nil {
		c.logger.Warn("metrics: count llm calls", "error", err)
		return
	}
	type sums struct{ hit, miss, out, cost int64 }
	byKind := map[string]*sums{}
	for _, k := range calls {
		ch <- prometheus.MustNewConstMetric(llmCallsDesc, prometheus.GaugeValue, float64(k.Calls), k.Kind, k.Outcome)
		s := byKind[k.Kind]
		if s == nil {
			s = &sums{}
			byKind[k.Kind] = s
		}
		s.hit += k.CacheHit
		s.miss += k.PromptTokens - k.CacheHit
		s.out += k.CompletionTokens
		s.cost += k.CostNanoUSD
	}
	for kind, s := range byKind {
		ch <- prometheus.MustNewConstMetric(llmTokensDesc, prometheus.GaugeValue, float64(s.hit), kind, "cache_hit")
		ch <- prometheus.MustNewConstMetric(llmTokensDesc, prometheus.GaugeValue, float64(s.miss), kind, "cache_miss")
		ch <- prometheus.MustNewConstMetric(llmTokensDesc, prometheus.GaugeValue, float64(s.out), kind, "completion")
		ch <- prometheus.MustNewConstMetric(llmCostDesc, prometheus.GaugeValue, float64(s.cost)/1e9, kind)
	}
}
