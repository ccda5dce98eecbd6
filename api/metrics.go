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
	upDesc = prometheus.NewDesc("mull_database_up",
		"1 when the job counts could be read from the database.", nil, nil)
)

func (c *jobCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- deadDesc
	ch <- upDesc
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
}
