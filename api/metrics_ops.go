package api

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/store"
)

// opsMetrics are the operator's gauges and counters beside the job metrics:
// budgets, paused queues, live workers and the trust gate's counts, read
// from the database at scrape time (so every process reports the shared
// state), and ingest counted as this process's API stores batches.
type opsMetrics struct {
	batches *prometheus.CounterVec
	events  *prometheus.CounterVec
}

// newOpsMetrics registers the ops collectors on reg.
func newOpsMetrics(reg *prometheus.Registry, d Deps) *opsMetrics {
	m := &opsMetrics{
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mull_ingest_batches_total",
			Help: "Event batches POST /v1/events received in this process, by outcome: stored (new events or not), rejected (a bad event: 400, nothing stored), failed (the store failed).",
		}, []string{"outcome"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mull_ingest_events_total",
			Help: "Events of stored batches POST /v1/events received in this process, by result: stored (new) or duplicate (a replay, changing nothing).",
		}, []string{"result"}),
	}
	for _, o := range []string{"stored", "rejected", "failed"} {
		m.batches.WithLabelValues(o)
	}
	for _, r := range []string{"stored", "duplicate"} {
		m.events.WithLabelValues(r)
	}
	reg.MustRegister(m.batches, m.events, &opsCollector{
		store: d.Store, ledger: d.Budget, logger: d.Logger, now: d.Now,
		deadAfter: d.Config.Workers.DeadAfter.D(),
	})
	return m
}

// ingested counts one POST /v1/events batch.
func (m *opsMetrics) ingested(res ingest.Result, err error) {
	var fe *events.FieldError
	switch {
	case errors.As(err, &fe):
		m.batches.WithLabelValues("rejected").Inc()
	case err != nil:
		m.batches.WithLabelValues("failed").Inc()
	default:
		m.batches.WithLabelValues("stored").Inc()
		m.events.WithLabelValues("stored").Add(float64(res.Stored))
		m.events.WithLabelValues("duplicate").Add(float64(res.Duplicates))
	}
}

// opsCollector reads budgets, queues, heartbeats and the gate's counts.
type opsCollector struct {
	store     *store.Store
	ledger    *budget.Ledger
	logger    *slog.Logger
	now       func() time.Time
	deadAfter time.Duration
}

var (
	budgetLimitDesc = prometheus.NewDesc("mull_budget_limit_tokens",
		"Today's daily token limit per budget key (0: none), in the budget zone.", []string{"key"}, nil)
	budgetReservedDesc = prometheus.NewDesc("mull_budget_reserved_tokens",
		"Tokens held today per budget key by calls in flight.", []string{"key"}, nil)
	budgetSpentDesc = prometheus.NewDesc("mull_budget_spent_tokens",
		"Tokens spent today per budget key by settled calls.", []string{"key"}, nil)
	budgetLimitUSDDesc = prometheus.NewDesc("mull_budget_limit_usd",
		"Today's daily money limit per budget key in USD (0: none).", []string{"key"}, nil)
	budgetSpentUSDDesc = prometheus.NewDesc("mull_budget_spent_usd",
		"USD spent today per budget key by settled calls.", []string{"key"}, nil)
	queuePausedDesc = prometheus.NewDesc("mull_queue_paused",
		"1 while a queue is paused (by an operator, a 402 or no API key), else 0.", []string{"queue"}, nil)
	workersLiveDesc = prometheus.NewDesc("mull_workers_live",
		"Worker processes whose last heartbeat is within workers.dead_after, on any machine sharing the database.", nil, nil)
	quarantinedDesc = prometheus.NewDesc("mull_quarantined",
		"Texts the trust gate quarantined, kept for review and never served, by kind (memory, handoff, playbook, merge, …).", []string{"kind"}, nil)
	redactedTextsDesc = prometheus.NewDesc("mull_redacted_texts",
		"Stored texts holding a credential the trust gate redacted, by table (memories, quarantine, handoffs).", []string{"table"}, nil)
	retroRedactionsDesc = prometheus.NewDesc("mull_retro_redactions",
		"Credentials the trust gate redacted in retros' output, summed over every applied retro.", nil, nil)
)

func (c *opsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{budgetLimitDesc, budgetReservedDesc, budgetSpentDesc, budgetLimitUSDDesc,
		budgetSpentUSDDesc, queuePausedDesc, workersLiveDesc, quarantinedDesc, redactedTextsDesc, retroRedactionsDesc} {
		ch <- d
	}
}

// Collect reports what it can read; a part that fails is logged and left
// out (mull_database_up says whether the database answers at all).
func (c *opsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.collectBudget(ctx, ch)
	c.collectQueues(ctx, ch)
	c.collectGate(ctx, ch)
}

func (c *opsCollector) collectBudget(ctx context.Context, ch chan<- prometheus.Metric) {
	if c.ledger == nil {
		return
	}
	keys, err := c.ledger.Report(ctx, "")
	if err != nil {
		c.logger.Warn("metrics: budget report", "error", err)
		return
	}
	for _, k := range keys {
		ch <- prometheus.MustNewConstMetric(budgetLimitDesc, prometheus.GaugeValue, float64(k.LimitTokens), k.Key)
		ch <- prometheus.MustNewConstMetric(budgetReservedDesc, prometheus.GaugeValue, float64(k.ReservedTokens), k.Key)
		ch <- prometheus.MustNewConstMetric(budgetSpentDesc, prometheus.GaugeValue, float64(k.SpentTokens), k.Key)
		ch <- prometheus.MustNewConstMetric(budgetLimitUSDDesc, prometheus.GaugeValue, k.LimitUSD, k.Key)
		ch <- prometheus.MustNewConstMetric(budgetSpentUSDDesc, prometheus.GaugeValue, k.CostUSD, k.Key)
	}
}

func (c *opsCollector) collectQueues(ctx context.Context, ch chan<- prometheus.Metric) {
	queues, err := c.store.QueueStates(ctx)
	if err != nil {
		c.logger.Warn("metrics: queues", "error", err)
	}
	for _, q := range queues {
		v := 0.0
		if q.Paused {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(queuePausedDesc, prometheus.GaugeValue, v, q.Name)
	}
	live, err := c.store.LiveWorkers(ctx, c.now().Add(-c.deadAfter))
	if err != nil {
		c.logger.Warn("metrics: live workers", "error", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(workersLiveDesc, prometheus.GaugeValue, float64(live))
}

func (c *opsCollector) collectGate(ctx context.Context, ch chan<- prometheus.Metric) {
	g, err := c.store.CountGate(ctx)
	if err != nil {
		c.logger.Warn("metrics: trust gate counts", "error", err)
		return
	}
	for kind, n := range g.Quarantined {
		ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, float64(n), kind)
	}
	for table, n := range g.RedactedTexts {
		ch <- prometheus.MustNewConstMetric(redactedTextsDesc, prometheus.GaugeValue, float64(n), table)
	}
	ch <- prometheus.MustNewConstMetric(retroRedactionsDesc, prometheus.GaugeValue, float64(g.RetroRedactions))
}
