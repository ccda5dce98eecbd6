package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
)

var (
	ledgerBenchRate     = flag.Int("ledger.rate", 500, "BenchmarkLedgerCheck: checks per second, sent open loop")
	ledgerBenchDuration = flag.Duration("ledger.duration", 10*time.Second, "BenchmarkLedgerCheck: how long the load lasts")
)

// BenchmarkLedgerCheck measures POST /v1/ledger/check against one real
// `mull serve` on loopback, on SQLite and PostgreSQL: an open-loop load at a
// fixed rate (-ledger.rate, 500/s) for -ledger.duration (10s), each check
// sent at its scheduled time whether or not the ones before it have
// answered, and its latency counted from that time (a stall shows in the
// figures instead of slowing the load). The mix is the hot path's: 60% of
// checks match no fact (one indexed read), 20% hit a fact in a warn
// workspace (a read; answer warn), 20% hit one in a block workspace (a
// deny: the counter and its event written). It reports p50, p99 and max
// in milliseconds and the rate achieved; it asserts no timing.
//
//	MULL_TEST_DATABASE_URL=postgres://… go test -run '^$' -bench LedgerCheck -benchtime 1x ./cmd/mull/
func BenchmarkLedgerCheck(b *testing.B) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		b.Run(dialect, func(b *testing.B) {
			r := newLedgerRig(b, dialect, wsBlockPrefix+"bench")
			// Facts recorded with retries an hour off keep intercepting
			// for the whole run.
			p := r.serve(b, "MULL_LEDGER_COMMAND_RETRY_AFTER=1h")
			warnWS, blockWS := wsFor("bench", ledger.ModeWarn), wsFor("bench", ledger.ModeBlock)
			for _, ws := range []string{warnWS, blockWS} {
				if o := p.observe(b, negledger.ObserveRequest{Call: bashCall(ws, "s0", "seed-"+ws, "npm test"), Outcome: failed()}); o.Effect != negledger.EffectRecorded {
					b.Fatalf("seed fact in %s: %+v", ws, o)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			round := 0
			next := func(i int) (negledger.CheckRequest, ledger.Answer) {
				id := fmt.Sprintf("bench-%d-%d", round, i)
				switch n := rng.IntN(10); {
				case n < 6:
					return negledger.CheckRequest{Call: bashCall(warnWS, "s1", id, fmt.Sprintf("go test ./pkg%d/...", i))}, ledger.AnswerAllow
				case n < 8:
					return negledger.CheckRequest{Call: bashCall(warnWS, "s1", id, "npm test")}, ledger.AnswerWarn
				default:
					return negledger.CheckRequest{Call: bashCall(blockWS, "s1", id, "npm test")}, ledger.AnswerDeny
				}
			}
			// A second's warm-up, not measured: connections, caches, the
			// first statements prepared.
			loadChecks(b, p, *ledgerBenchRate, time.Second, next)
			var res benchResult
			for b.Loop() {
				round++
				res = loadChecks(b, p, *ledgerBenchRate, *ledgerBenchDuration, next)
			}
			b.ReportMetric(res.pct(0.50), "p50-ms")
			b.ReportMetric(res.pct(0.99), "p99-ms")
			b.ReportMetric(res.pct(1), "max-ms")
			b.ReportMetric(res.rate, "checks/s")
			b.Logf("%s: %d checks at %d/s for %s: p50 %.2fms p99 %.2fms max %.2fms, achieved %.0f/s",
				dialect, len(res.lat), *ledgerBenchRate, *ledgerBenchDuration, res.pct(0.5), res.pct(0.99), res.pct(1), res.rate)
			for _, a := range []ledger.Answer{ledger.AnswerAllow, ledger.AnswerWarn, ledger.AnswerDeny} {
				c := res.by[a]
				b.Logf("  %-5s %5d checks: p50 %.2fms p99 %.2fms max %.2fms", a, len(c.lat), c.pct(0.5), c.pct(0.99), c.pct(1))
			}
		})
	}
}

type benchResult struct {
	lat  []time.Duration // sorted
	rate float64
	// by are the latencies of each kind of check (no fact, warn, deny).
	by map[ledger.Answer]benchResult
}

// pct is the q-quantile latency in milliseconds (1: the max).
func (r benchResult) pct(q float64) float64 {
	if len(r.lat) == 0 {
		return 0
	}
	i := min(int(q*float64(len(r.lat))+0.5), len(r.lat)) - 1
	return float64(r.lat[max(i, 0)].Microseconds()) / 1000
}

// loadChecks sends rate checks a second for d, open loop; next makes the
// i-th request and the answer it must get.
func loadChecks(b *testing.B, p *serveProc, rate int, d time.Duration, next func(i int) (negledger.CheckRequest, ledger.Answer)) benchResult {
	b.Helper()
	total := int(d.Seconds() * float64(rate))
	interval := time.Second / time.Duration(rate)
	lat := make([]time.Duration, total)
	kinds := make([]ledger.Answer, total)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var last time.Time
	ctx := testwait.Context(b)
	start := time.Now()
	for i := range total {
		req, want := next(i)
		kinds[i] = want
		at := start.Add(time.Duration(i) * interval)
		if w := time.Until(at); w > 0 {
			<-time.After(w)
		}
		wg.Go(func() {
			var resp negledger.CheckResponse
			code, body, err := p.send(ctx, "/v1/ledger/check", req)
			done := time.Now()
			lat[i] = done.Sub(at)
			mu.Lock()
			if done.After(last) {
				last = done
			}
			mu.Unlock()
			if err != nil || code != http.StatusOK {
				b.Errorf("check %d: %d %s %v", i, code, body, err)
				return
			}
			if err := json.Unmarshal(body, &resp); err != nil || resp.Verdict != want {
				b.Errorf("check %d: %s, want %s", i, body, want)
			}
		})
	}
	wg.Wait()
	res := benchResult{rate: float64(total) / last.Sub(start).Seconds(), by: map[ledger.Answer]benchResult{}}
	for i, k := range kinds {
		c := res.by[k]
		c.lat = append(c.lat, lat[i])
		res.by[k] = c
	}
	for k, c := range res.by {
		slices.Sort(c.lat)
		res.by[k] = c
	}
	slices.Sort(lat)
	res.lat = lat
	return res
}
