// Package benchmarks measures mull's engine against raw River on the same
// database, in one run: go test -run '^$' -bench . -benchtime 5000x ./benchmarks/
package benchmarks

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/workflows"
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

// BenchmarkNoopJobs works b.N no-op jobs on each database three ways: raw
// River; mull's engine (registry, insert middleware, spec worker); and
// mull's workflows (each job a step of a split → 98 parts → join run, with
// its start, completion and unblocking transactions). It reports jobs/s,
// and the workflow steps' rate as a share of the engine's plain jobs' rate
// in the same run (x-plain; run all three to get it). Both use 200 workers
// and a 100 ms fetch cooldown, which caps any queue near 2000 jobs/s: on
// this kind of machine the plain jobs run at that cap.
func BenchmarkNoopJobs(b *testing.B) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		var plain float64 // the engine's plain jobs/s, from the run before
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
			engine.Add(reg, engine.Spec{Timeout: time.Minute}, &noopWorker{})
			cfg := config.Default()
			cfg.Workers.Queues = map[string]int{"default": benchWorkers}
			c := enginetest.NewClient(b, s, reg, cfg, true)
			plain = benchClient(b, c)
		})
		b.Run(dialect+"/workflow", func(b *testing.B) {
			s, r, c := workflowEnv(b, dialect)
			rate, _ := benchWorkflows(b, s, r, c, 98, false)
			if plain > 0 {
				b.ReportMetric(rate/plain, "x-plain")
			}
		})
	}
}

// BenchmarkWorkflowWidth works b.N no-op workflow steps on each database as
// split → W parts → join runs, 10 and 1000 wide, and reports what a step
// costs: with a step's completion reading and unblocking only its
// dependents, ns/step must not grow with the width. The 1000-wide run
// reports its ns/step as a multiple of the 10-wide one's in the same run
// (x-10wide; about 1 is flat).
func BenchmarkWorkflowWidth(b *testing.B) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		var narrow float64 // ns/step of the 10-wide run
		for _, width := range []int{10, 1000} {
			b.Run(fmt.Sprintf("%s/%d", dialect, width), func(b *testing.B) {
				s, r, c := workflowEnv(b, dialect)
				_, perStep := benchWorkflows(b, s, r, c, width, true)
				if width == 10 {
					narrow = perStep
				} else if narrow > 0 {
					b.ReportMetric(perStep/narrow, "x-10wide")
				}
			})
		}
	}
}

// workflowEnv is a store and a client whose only step kind is a no-op.
func workflowEnv(b *testing.B, dialect string) (*store.Store, *workflows.Runner, *engine.Client) {
	s := storetest.New(b, dialect)
	reg := engine.NewRegistry(nil)
	runner := workflows.New(s, enginetest.Logger())
	workflows.AddStep(reg, runner, engine.Spec{Timeout: time.Minute},
		func(context.Context, *workflows.Step[noopArgs]) (workflows.Result, error) {
			return workflows.Result{Output: true}, nil
		})
	cfg := config.Default()
	cfg.Workers.Queues = map[string]int{"default": benchWorkers}
	return s, runner, enginetest.NewClient(b, s, reg, cfg, true)
}

// fanOut is a split → width parts → join run of no-op steps.
func fanOut(width int) workflows.Def {
	def := workflows.Def{Name: "bench", Steps: []workflows.StepDef{{Name: "split", Args: noopArgs{}}}}
	var parts []string
	for i := range width {
		parts = append(parts, fmt.Sprintf("p%d", i))
		def.Steps = append(def.Steps, workflows.StepDef{Name: parts[i], Args: noopArgs{N: i}, After: []string{"split"}})
	}
	if width > 0 {
		def.Steps = append(def.Steps, workflows.StepDef{Name: "join", Args: noopArgs{}, After: parts})
	}
	return def
}

// benchWorkflows starts split → width → join runs until they hold b.N
// steps (the last one narrower unless full), and reports and returns
// steps/s and ns/step (reported only with full).
func benchWorkflows(b *testing.B, s *store.Store, r *workflows.Runner, c *engine.Client, width int, full bool) (rate, perStep float64) {
	ctx := context.Background()
	done, cancel := c.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: b.N + width + 200})
	defer cancel()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer c.Stop(ctx)
	b.ResetTimer()
	start := time.Now()
	steps := 0
	for steps < b.N {
		w := width
		if !full {
			w = max(min(width+2, b.N-steps)-2, 0)
		}
		def := fanOut(w)
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			_, err := r.Start(ctx, tx, c, def)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		steps += len(def.Steps)
	}
	timeout := time.After(10 * time.Minute)
	for range steps {
		select {
		case <-done:
		case <-timeout:
			b.Fatal("steps did not finish")
		}
	}
	elapsed := time.Since(start)
	rate, perStep = float64(steps)/elapsed.Seconds(), float64(elapsed.Nanoseconds())/float64(steps)
	b.ReportMetric(rate, "jobs/s")
	if full {
		b.ReportMetric(perStep, "ns/step")
	}
	return rate, perStep
}

// benchClient works b.N no-op jobs and reports and returns jobs/s.
func benchClient(b *testing.B, c *engine.Client) float64 {
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
	rate := float64(b.N) / time.Since(start).Seconds()
	b.ReportMetric(rate, "jobs/s")
	return rate
}
