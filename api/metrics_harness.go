package api

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/store"
)

// registerHarnessMetrics registers the harness collector on reg when there
// is a harness to read. Its counts are read from the database at scrape
// time: refinements are applied by the worker processes' refine_review
// jobs as well as by this API, so a process-local counter would miss most.
func registerHarnessMetrics(reg *prometheus.Registry, d Deps) {
	if d.Harness != nil {
		reg.MustRegister(&harnessCollector{harness: d.Harness, logger: d.Logger})
	}
}

type harnessCollector struct {
	harness *harnesses.Service
	logger  *slog.Logger
}

var (
	harnessRefinementsDesc = prometheus.NewDesc("mull_harness_refinements_total",
		"Harness refinements committed, by scope (global, local) and source (job, agent, admin); rollbacks included.",
		[]string{"scope", "source"}, nil)
	harnessEditsDesc = prometheus.NewDesc("mull_harness_edits_total",
		"Edits of committed harness refinements, by result: applied, or rejected by a rule (its message is in the refinement).",
		[]string{"result"}, nil)
	harnessReviewsDesc = prometheus.NewDesc("mull_harness_reviews_total",
		"refine_review verdicts recorded, by outcome: declined, assessed (approved, no edit), approved, failed.",
		[]string{"outcome"}, nil)
	harnessEntriesDesc = prometheus.NewDesc("mull_harness_entries",
		"Harness entries now, by kind and scope (global, local); archived ones included, deleted ones not.",
		[]string{"kind", "scope"}, nil)
)

func (c *harnessCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{harnessRefinementsDesc, harnessEditsDesc, harnessReviewsDesc, harnessEntriesDesc} {
		ch <- d
	}
}

// Collect reports the counts, or nothing when the read fails (logged).
func (c *harnessCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.harness.Stats(ctx)
	if err != nil {
		c.logger.Warn("metrics: harness stats", "error", err)
		return
	}
	emit := func(d *prometheus.Desc, t prometheus.ValueType, counts []store.HarnessCount, labels int) {
		for _, n := range counts {
			vals := []string{n.A, n.B}[:labels]
			ch <- prometheus.MustNewConstMetric(d, t, float64(n.N), vals...)
		}
	}
	emit(harnessRefinementsDesc, prometheus.CounterValue, st.Refinements, 2)
	emit(harnessEditsDesc, prometheus.CounterValue, st.Edits, 1)
	emit(harnessReviewsDesc, prometheus.CounterValue, st.Reviews, 1)
	emit(harnessEntriesDesc, prometheus.GaugeValue, st.Entries, 2)
}
