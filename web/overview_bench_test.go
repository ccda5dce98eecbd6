package web_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/web"
)

// BenchmarkPanelOverviewBusy renders the overview on SQLite with 30 days
// of history (30,000 LLM calls, 45,000 agent usage events, 20,000
// finished jobs) while a River client works jobs as fast as it can, each
// job writing a row and inserting its successor: River's producer,
// completer and workers keep the one writer connection busy. Each
// iteration renders the page once in each way, in turn, so a machine's
// changing load falls on all three alike:
//
//   - before: the reads on the one writer connection, the 30 days of
//     agent usage read and priced on every visit (as before this change);
//   - pool: the reads on SQLite's read pool (store.readDB);
//   - after: the pool, and the past days' agent usage kept (agentDays).
//
// It reports each way's ms per page and the River jobs completed per
// second while that way's pages rendered (the writer connection a page
// holds is River's loss). BenchmarkPanelOverviewBusy/reads times each
// section's store reads on the writer connection and on the pool, in turn.
//
//	go test ./web -run '^$' -bench PanelOverviewBusy -benchtime 10x
func BenchmarkPanelOverviewBusy(b *testing.B) {
	s := storetest.New(b, store.SQLite)
	seedOverview(b, s)
	done, stop := busyRiver(b, s)
	defer stop()
	cfg := config.Default()
	type way struct {
		name    string
		s       *store.Store
		nocache bool
		p       *web.Panel
		took    time.Duration
		jobs    int64
	}
	ways := []*way{{name: "before", s: s.ReadsShared(), nocache: true}, {name: "pool", s: s, nocache: true}, {name: "after", s: s}}
	for _, w := range ways {
		led, err := budget.New(w.s, cfg.Budget)
		if err != nil {
			b.Fatal(err)
		}
		if w.p, err = web.New(web.Deps{Store: w.s, Budget: led, Config: cfg, Now: time.Now,
			Access: func(*http.Request) web.Access { return web.Access{Read: true} }}); err != nil {
			b.Fatal(err)
		}
		if w.nocache {
			w.p.NoAgentCache()
		}
	}
	render := func(w *way) {
		rec := httptest.NewRecorder()
		w.p.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("overview (%s): %d\n%s", w.name, rec.Code, rec.Body)
		}
	}
	b.Run("page", func(b *testing.B) {
		for _, w := range ways {
			render(w) // warm: the after way keeps its past days from here
			w.took, w.jobs = 0, 0
		}
		for b.Loop() {
			for _, w := range ways {
				j0, t0 := done.Load(), time.Now()
				render(w)
				w.took += time.Since(t0)
				w.jobs += done.Load() - j0
			}
		}
		for _, w := range ways {
			b.ReportMetric(float64(w.took.Microseconds())/1000/float64(b.N), w.name+"-ms/page")
			b.ReportMetric(float64(w.jobs)/w.took.Seconds(), w.name+"-jobs/s")
		}
	})
	b.Run("reads", func(b *testing.B) {
		ctx := context.Background()
		since := time.Now().UTC().AddDate(0, 0, -29)
		led := map[*store.Store]*budget.Ledger{}
		for _, w := range ways[:2] {
			led[w.s], _ = budget.New(w.s, cfg.Budget)
		}
		reads := []struct {
			name string
			f    func(s *store.Store) error
		}{
			{"jobcounts", func(s *store.Store) error { _, err := s.JobCounts(ctx); return err }},
			{"workers", func(s *store.Store) error { _, err := s.ListWorkers(ctx); return err }},
			{"budget", func(s *store.Store) error { _, err := led[s].ReportDay(ctx, ""); return err }},
			{"dead", func(s *store.Store) error { _, err := s.DeadLetterCounts(ctx); return err }},
			{"usages30d", func(s *store.Store) error {
				_, err := s.AgentUsages(ctx, store.OverheadFilter{Since: since})
				return err
			}},
			{"countusages30d", func(s *store.Store) error {
				_, err := s.CountAgentUsages(ctx, store.OverheadFilter{Since: since})
				return err
			}},
			{"spend30d", func(s *store.Store) error {
				_, err := s.SumLearningSpend(ctx, store.OverheadFilter{Since: since})
				return err
			}},
		}
		took := make([][2]time.Duration, len(reads))
		for b.Loop() {
			for i, r := range reads {
				for j, w := range ways[:2] {
					t0 := time.Now()
					if err := r.f(w.s); err != nil {
						b.Fatal(err)
					}
					took[i][j] += time.Since(t0)
				}
			}
		}
		for i, r := range reads {
			for j, w := range ways[:2] {
				b.ReportMetric(float64(took[i][j].Microseconds())/1000/float64(b.N), r.name+"-"+map[string]string{"before": "writer", "pool": "pool"}[w.name]+"-ms")
			}
		}
	})
}

// seedOverview stores 30 days of history in one transaction.
func seedOverview(b *testing.B, s *store.Store) {
	b.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	kinds := []string{"retro_session", "consolidate", "reflect", "digest"}
	err := s.InTx(ctx, func(tx *sql.Tx) error {
		for i := range 30_000 {
			at := now.Add(-time.Duration(i) * 30 * 24 * time.Hour / 30_000)
			if _, err := tx.ExecContext(ctx, `insert into llm_calls (id, job_id, kind, workspace, model, prompt_tokens,
				completion_tokens, cache_hit_tokens, cache_miss_tokens, cost_nano_usd, latency_ms, outcome, created_at)
				values ($1, $2, $3, $4, 'deepseek-v4-flash', 1200, 300, 800, 400, 250000, 900, 'ok', $5)`,
				fmt.Sprintf("call_%d", i), i, kinds[i%len(kinds)], fmt.Sprintf("/work/p%d", i%5), at); err != nil {
				return err
			}
		}
		for w := range 5 {
			if _, _, err := s.LockSession(ctx, tx, fmt.Sprintf("sess-%d", w), fmt.Sprintf("/work/p%d", w), now.AddDate(0, 0, -30)); err != nil {
				return err
			}
		}
		var evs []store.Event
		for i := range 45_000 {
			at := now.Add(-time.Duration(i) * 30 * 24 * time.Hour / 45_000)
			evs = append(evs, store.Event{ID: fmt.Sprintf("u%d", i), SessionID: fmt.Sprintf("sess-%d", i%5), Workspace: fmt.Sprintf("/work/p%d", i%5),
				Type: "usage", Time: at, Source: store.SourceImport,
				Payload: []byte(`{"model":"deepseek-v4-flash","input_tokens":245,"cache_read_tokens":8384,"output_tokens":36,"reasoning_tokens":10,"turn":1,"step":1}`)})
		}
		if _, err := s.InsertEvents(ctx, tx, evs); err != nil {
			return err
		}
		for i := range 20_000 {
			state, errs := "completed", "null"
			switch {
			case i%40 == 0:
				state, errs = "discarded", `[{"at":"2026-01-01T00:00:00Z","attempt":1,"error":"boom"}]`
			case i%97 == 0:
				state, errs = "cancelled", `[{"at":"2026-01-01T00:00:00Z","attempt":1,"error":"bad input"}]`
			}
			at := now.Add(-time.Duration(i) * time.Minute)
			if _, err := tx.ExecContext(ctx, `insert into river_job (args, kind, max_attempts, priority, queue, state,
				created_at, scheduled_at, finalized_at, errors) values ('{}', $1, 25, 1, 'default', $2, $3, $3, $3, nullif($4, 'null'))`,
				kinds[i%len(kinds)], state, at.Format("2006-01-02 15:04:05.000"), errs); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// busyArgs is a job that writes an LLM call record outside the charts'
// window and inserts its successor: a queue that never drains.
type busyArgs struct{ N int }

func (busyArgs) Kind() string { return "bench_busy" }

type busyWorker struct {
	river.WorkerDefaults[busyArgs]
	s    *store.Store
	done *atomic.Int64
}

func (w *busyWorker) Work(ctx context.Context, j *river.Job[busyArgs]) error {
	old := time.Now().UTC().AddDate(0, 0, -60)
	if err := w.s.InsertLLMCall(ctx, store.LLMCall{ID: fmt.Sprintf("busy_%d", j.ID), Kind: "busy", Model: "m", Outcome: "ok", CreatedAt: old}); err != nil {
		return err
	}
	_, err := river.ClientFromContext[*sql.Tx](ctx).Insert(ctx, busyArgs{N: j.Args.N + 1}, nil)
	w.done.Add(1)
	return err
}

// busyRiver starts a River client working 100 circulating busy jobs with
// 20 workers; done counts the jobs worked, stop stops it.
func busyRiver(b *testing.B, s *store.Store) (done *atomic.Int64, stop func()) {
	b.Helper()
	done = &atomic.Int64{}
	workers := river.NewWorkers()
	river.AddWorker(workers, &busyWorker{s: s, done: done})
	c, err := river.NewClient(s.Driver(), &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 20}},
		Workers:       workers,
		FetchCooldown: 10 * time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		if _, err := c.Insert(ctx, busyArgs{N: i}, nil); err != nil {
			b.Fatal(err)
		}
	}
	return done, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	}
}
