package budget_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestConcurrentReservationsNeverPassTheLimit starts 50 callers at once
// against a key with room for 16 of their worst cases: each reserves 300
// tokens, "calls" the model, and settles 250; the rest are refused. The
// key's settled total never passes its limit. With hold, every caller keeps
// its reservation until all have tried, so exactly 16 fit at once; without,
// settles interleave with reservations and free room for a few more.
func TestConcurrentReservationsNeverPassTheLimit(t *testing.T) {
	for _, hold := range []bool{true, false} {
		t.Run(map[bool]string{true: "hold", false: "interleaved"}[hold], func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, s *store.Store) { concurrentCallers(t, s, hold) })
		})
	}
}

func concurrentCallers(t *testing.T, s *store.Store, hold bool) {
	const (
		callers = 50
		limit   = 5000
		need    = 300
		used    = 250
	)
	ctx := context.Background()
	l, _ := newLedger(t, s, "Asia/Shanghai", map[string]config.Limit{"global": tokens(limit)})
	_, resetAt := l.Day(t0)
	var ok, refused atomic.Int64
	errs := make(chan error, callers)
	start, called := make(chan struct{}), make(chan struct{})
	var tried, wg sync.WaitGroup
	tried.Add(callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := l.Reserve(ctx, budget.Request{JobID: int64(i), Kind: "retro", Workspace: "/w", Tokens: need})
			var e *budget.ExhaustedError
			if errors.As(err, &e) {
				refused.Add(1) // before tried.Done, so the count is complete when tried is
			}
			tried.Done()
			switch {
			case errors.As(err, &e):
				if e.Key != "global" || !e.ResetAt.Equal(resetAt) {
					errs <- err
				}
				return
			case err != nil:
				errs <- err
				return
			}
			if hold {
				<-called // the call lasts until every caller has tried
			} else {
				runtime.Gosched() // the call
			}
			if err := l.Settle(ctx, r, budget.Usage{PromptTokens: used - 50, CompletionTokens: 50}); err != nil {
				errs <- err
				return
			}
			ok.Add(1)
		}()
	}
	close(start)
	tried.Wait()
	if hold {
		if g := report(t, l, "")["global"]; g.ReservedTokens != limit/need*need || refused.Load() != callers-limit/need {
			t.Errorf("all holding: global %+v, %d refused; want %d reserved", g, refused.Load(), limit/need*need)
		}
	}
	close(called)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	g := report(t, l, "")["global"]
	t.Logf("%d settled, %d refused; global %+v", ok.Load(), refused.Load(), g)
	if g.SpentTokens > limit {
		t.Fatalf("spent %d, over the limit %d", g.SpentTokens, limit)
	}
	if g.SpentTokens != ok.Load()*used || g.ReservedTokens != 0 || g.Calls != ok.Load() || g.Refused != refused.Load() {
		t.Fatalf("global = %+v after %d settled calls of %d tokens and %d refusals", g, ok.Load(), used, refused.Load())
	}
	if ok.Load()+refused.Load() != callers || ok.Load() < limit/need {
		t.Fatalf("%d settled and %d refused of %d; at least %d fit", ok.Load(), refused.Load(), callers, limit/need)
	}
	for _, k := range []string{"kind:retro", "workspace:/w"} {
		if r := report(t, l, "")[k]; r.SpentTokens != g.SpentTokens || r.ReservedTokens != 0 {
			t.Fatalf("%s = %+v, want the same spent as global", k, r)
		}
	}
}
