package api

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/negledger"
)

// ledgerMetrics count the negative ledger's decisions as this process's
// API answers them (checks by answer, observations by effect), and read
// the seed's three honest counters and the fact counts from the database
// at scrape time, so every process reports the shared ledger.
type ledgerMetrics struct {
	checks   *prometheus.CounterVec
	observes *prometheus.CounterVec
}

// The labels a ledger metric can take besides the service's own values.
const ledgerErrorLabel = "error"

// newLedgerMetrics registers the ledger's collectors on reg. The scrape
// collector is registered only with a ledger to read.
func newLedgerMetrics(reg *prometheus.Registry, d Deps) *ledgerMetrics {
	m := &ledgerMetrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mull_ledger_checks_total",
			Help: "POST /v1/ledger/check answers this process gave, by answer: allow, warn, deny, verify-retry, in-progress, or error (a refused or failed request).",
		}, []string{"answer"}),
		observes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mull_ledger_observations_total",
			Help: "POST /v1/ledger/observe outcomes this process stored, by effect: recorded (a new fact), evidence (a new evidence version), resolved, released, none, or error.",
		}, []string{"effect"}),
	}
	for _, a := range []ledger.Answer{ledger.AnswerAllow, ledger.AnswerWarn, ledger.AnswerDeny, ledger.AnswerVerifyRetry,
		ledger.AnswerInProgress, ledgerErrorLabel} {
		m.checks.WithLabelValues(string(a))
	}
	for _, e := range []string{negledger.EffectRecorded, negledger.EffectEvidence, negledger.EffectResolved,
		negledger.EffectReleased, negledger.EffectNone, ledgerErrorLabel} {
		m.observes.WithLabelValues(e)
	}
	reg.MustRegister(m.checks, m.observes)
	if d.Negledger != nil {
		reg.MustRegister(&ledgerCollector{ledger: d.Negledger, logger: d.Logger})
	}
	return m
}

// checked counts one check's answer.
func (m *ledgerMetrics) checked(out negledger.CheckResponse, err error) {
	if err != nil {
		m.checks.WithLabelValues(ledgerErrorLabel).Inc()
		return
	}
	m.checks.WithLabelValues(string(out.Verdict)).Inc()
}

// observed counts one observation's effect.
func (m *ledgerMetrics) observed(out negledger.ObserveResponse, err error) {
	if err != nil {
		m.observes.WithLabelValues(ledgerErrorLabel).Inc()
		return
	}
	m.observes.WithLabelValues(out.Effect).Inc()
}

// ledgerCollector reads Stats over every workspace.
type ledgerCollector struct {
	ledger *negledger.Service
	logger *slog.Logger
}

var (
	ledgerFactsDesc = prometheus.NewDesc("mull_ledger_facts",
		"Negative ledger facts stored, every version.", nil, nil)
	ledgerCurrentDesc = prometheus.NewDesc("mull_ledger_facts_current",
		"Negative ledger facts that are the current one of their fingerprint.", nil, nil)
	ledgerHitDesc = prometheus.NewDesc("mull_ledger_facts_hit",
		"Negative ledger facts a later attempt hit (a duplicate failure, a warning or a deny).", nil, nil)
	ledgerDuplicatesDesc = prometheus.NewDesc("mull_ledger_duplicate_failures_observed_total",
		"Later attempts that ran and failed the same way again: observed, not prevented.", nil, nil)
	ledgerWarningsDesc = prometheus.NewDesc("mull_ledger_warnings_emitted_total",
		"Ledger notes attached to results that ran (warn mode).", nil, nil)
	ledgerDeniedDesc = prometheus.NewDesc("mull_ledger_calls_denied_total",
		"Tool calls the ledger denied before dispatch (block mode): the only proof of an avoided execution.", nil, nil)
)

func (c *ledgerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{ledgerFactsDesc, ledgerCurrentDesc, ledgerHitDesc, ledgerDuplicatesDesc,
		ledgerWarningsDesc, ledgerDeniedDesc} {
		ch <- d
	}
}

// Collect reports the counters, or nothing when the read fails (logged).
func (c *ledgerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sum, err := c.ledger.Stats(ctx, "")
	if err != nil {
		c.logger.Warn("metrics: ledger stats", "error", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(ledgerFactsDesc, prometheus.GaugeValue, float64(sum.Facts))
	ch <- prometheus.MustNewConstMetric(ledgerCurrentDesc, prometheus.GaugeValue, float64(sum.Current))
	ch <- prometheus.MustNewConstMetric(ledgerHitDesc, prometheus.GaugeValue, float64(sum.FactsHit))
	ch <- prometheus.MustNewConstMetric(ledgerDuplicatesDesc, prometheus.CounterValue, float64(sum.DuplicateFailuresObserved))
	ch <- prometheus.MustNewConstMetric(ledgerWarningsDesc, prometheus.CounterValue, float64(sum.WarningsEmitted))
	ch <- prometheus.MustNewConstMetric(ledgerDeniedDesc, prometheus.CounterValue, float64(sum.CallsDenied))
}
