package budget_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// benchCallers is how many goroutines reserve and settle at once.
const benchCallers = 50

// BenchmarkReserveSettle measures reserve+settle pairs per second with 50
// concurrent callers, all on the global key (the hottest row there is),
// spread over one kind and five workspaces. One op is one pair.
//
//	MULL_TEST_DATABASE_URL=postgres://… go test -run '^$' -bench ReserveSettle ./budget/
func BenchmarkReserveSettle(b *testing.B) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		b.Run(dialect, func(b *testing.B) {
			s := storetest.New(b, dialect)
			l, err := budget.New(s, config.Budget{Limits: map[string]config.Limit{"global": {Tokens: 1 << 60}}})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := l.SyncConfig(ctx); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			b.SetParallelism((benchCallers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ws := "/w" + strconv.FormatInt(n.Add(1)%5, 10)
				for pb.Next() {
					r, err := l.Reserve(ctx, budget.Request{Kind: "bench", Workspace: ws, Tokens: 300})
					if err != nil {
						b.Error(err)
						return
					}
					if err := l.Settle(ctx, r, budget.Usage{PromptTokens: 200, CompletionTokens: 50}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}
