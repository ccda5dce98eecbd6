package memories_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// BenchmarkMemorySearch times the agent's memory_search (Service.Search,
// uses bumped) on a workspace of 10,000 memories, on each database, and
// reports each query's p50 and p99 in milliseconds (the goal: p99 under
// 10 ms). Postgres runs when MULL_TEST_DATABASE_URL is set.
//
//	go test ./memories -run '^$' -bench MemorySearch -benchtime 500x
func BenchmarkMemorySearch(b *testing.B) {
	middle := strings.Fields(storetest.Sentence(5000)) // a filler sentence's words
	han := []rune(storetest.Sentence(5003))            // a Chinese one
	queries := []struct{ name, q string }{
		{"middle word", middle[len(middle)/2]},
		{"inside a word", middle[len(middle)/2][1:]},
		{"three words", middle[1] + " " + middle[len(middle)-1] + " " + strings.Fields(storetest.Sentence(7001))[2]},
		{"chinese 2 chars", string(han[4:6])},
		{"chinese 3 chars", string(han[4:7])},
		{"miss", "calibrateflux"},
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		b.Run(dialect, func(b *testing.B) {
			s := storetest.New(b, dialect)
			storetest.Memories(b, s, "/w", 0, 10000, t0)
			storetest.Memories(b, s, "/other", 10000, 2000, t0)
			cfg := config.Default()
			s.SetClock(func() time.Time { return t0.Add(time.Hour) })
			svc := memories.New(s, cfg.Memory, cfg.Digest)
			for _, q := range queries {
				b.Run(q.name, func(b *testing.B) {
					ctx := context.Background()
					var took []time.Duration
					hits := 0
					for b.Loop() {
						start := time.Now()
						h, err := svc.Search(ctx, memories.Query{Workspace: "/w", Text: q.q})
						took = append(took, time.Since(start))
						if err != nil {
							b.Fatal(err)
						}
						hits = len(h)
					}
					slices.Sort(took)
					pct := func(p float64) float64 {
						return float64(took[min(len(took)-1, int(p*float64(len(took))))].Microseconds()) / 1000
					}
					b.ReportMetric(pct(0.50), "p50-ms")
					b.ReportMetric(pct(0.99), "p99-ms")
					b.ReportMetric(float64(hits), "hits")
				})
			}
		})
	}
}
