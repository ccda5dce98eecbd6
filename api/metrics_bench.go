package api

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mullhq/mull/store"
)

// registerBenchMetrics registers the benchmark collector on reg when the
// server has benchmarks. Its counts are read from the database at scrape
// time: cells are recorded by the workers' bench_cell jobs, in any
// process.
func registerBenchMetrics(reg *prometheus.Registry, d Deps) {
	if d.Bench != nil && d.Store != nil {
		reg.MustRegister(&benchCollector{store: d.Store, logger: d.Logger})
	}
}

type benchCollector struct {
	store  *store.Store
	logger *slog.Logger
}

var (
	benchRunsDesc = prometheus.NewDesc("mull_bench_runs",
		"A/B benchmark runs now, by status: running, decided, failed (the workflow failed) or cancelled.",
		[]string{"status"}, nil)
	benchCellsDesc = prometheus.NewDesc("mull_bench_cells_total",
		"Benchmark cells recorded, by side (reference, candidate) and status: ok (scored) or failed (no score, never 0).",
		[]string{"side", "status"}, nil)
)

func (c *benchCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- benchRunsDesc
	ch <- benchCellsDesc
}

// Collect reports the counts, or nothing when the read fails (logged).
func (c *benchCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.store.BenchCounts(ctx)
	if err != nil {
		c.logger.Warn("metrics: bench counts", "error", err)
		return
	}
	for _, n := range st.Runs {
		ch <- prometheus.MustNewConstMetric(benchRunsDesc, prometheus.GaugeValue, float64(n.N), n.A)
	}
	for _, n := range st.Cells {
		ch <- prometheus.MustNewConstMetric(benchCellsDesc, prometheus.CounterValue, float64(n.N), n.A, n.B)
	}
}
