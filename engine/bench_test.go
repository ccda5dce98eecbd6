package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

type noopArgs struct {
	N int `json:"n"`
}

func (noopArgs) Kind() string { return "bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

const benchWorkers = 200

// BenchmarkNoopJobs works b.N no-op jobs through raw River and through
// mull's engine (registry, insert middleware, spec worker), on each database,
// and reports jobs/s. Run: go test -run '^$' -bench NoopJobs -benchtime 5000x ./engine/
func BenchmarkNoopJobs(b *testing.B) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		b.Run(dialect+"/river", func(b *testing.B) {
			s := storetest.New(b, dialect)
			workers := river.NewWorkers()
			river.AddWorker(workers, &noopWorker{})
			c, err := river.NewClient(s.Driver(), &river.Config{
				Logger:  enginetest.Logger(),
				Workers: workers,
				Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: benchWorkers}},
			})
			if err != nil {
				b.Fatal(err)
			}
			benchClient(b, c)
		})
		b.Run(dialect+"/mull", func(b *testing.B) {
			s := storetest.New(b, dialect)
			reg := engine.NewRegistry(nil)
			engine.Add(reg, engine.Spec{Kind: "bench_noop", Timeout: time.Minute}, &noopWorker{})
			cfg := config.Default()
			cfg.Workers.Queues = map[string]int{"default": benchWorkers}
			c := enginetest.NewClient(b, s, reg, cfg, true)
			benchClient(b, c)
		})
	}
}

func benchClient(b *testing.B, c *engine.Client) {
	ctx := context.Background()
	done, cancel := c.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: b.N + 1})
	defer cancel()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer c.Stop(ctx)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i += 1000 {
		params := make([]river.InsertManyParams, 0, 1000)
		for j := i; j < min(i+1000, b.N); j++ {
			params = append(params, river.InsertManyParams{Args: noopArgs{N: j}})
		}
		if _, err := c.InsertMany(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	timeout := time.After(5 * time.Minute)
	for range b.N {
		select {
		case <-done:
		case <-timeout:
			b.Fatal("jobs did not finish")
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}
