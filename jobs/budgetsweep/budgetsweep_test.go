package budgetsweep_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/jobs/budgetsweep"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestSweepReleasesAndMarksLost leaves two calls as a killed worker would:
// a reservation held and a record running. Once the older one is past the
// client's Hold, the sweep releases its reservation and marks its record
// lost; the younger one keeps both.
func TestSweepReleasesAndMarksLost(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		now := t0
		s.SetClock(func() time.Time { return now })
		ledger, err := budget.New(s, config.Budget{})
		if err != nil {
			t.Fatal(err)
		}
		hold := llm.New(llm.Options{Config: config.Default().LLM}).Hold()
		if hold != config.Default().LLM.CallTimeout.D()+time.Minute {
			t.Fatalf("Hold = %s, want llm.call_timeout plus a minute", hold)
		}
		killed := func(job int64, start time.Time) store.LLMCall {
			t.Helper()
			if _, err := ledger.Reserve(ctx, budget.Request{JobID: job, Kind: "retro_session", Tokens: 100, Expires: start.Add(hold)}); err != nil {
				t.Fatal(err)
			}
			c := store.LLMCall{JobID: job, Kind: "retro_session", Model: "deepseek-v4-flash", CreatedAt: start}
			if err := s.StartLLMCall(ctx, &c); err != nil {
				t.Fatal(err)
			}
			return c
		}
		stale, fresh := killed(1, t0), killed(2, t0.Add(2*time.Second))

		var logs bytes.Buffer
		w := &budgetsweep.Worker{Ledger: ledger, Store: s, Hold: hold, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
		now = t0.Add(hold + time.Second)
		if err := w.Work(ctx, &river.Job[budgetsweep.Args]{}); err != nil {
			t.Fatal(err)
		}
		outcome := map[string]store.LLMCall{}
		calls, err := s.ListLLMCalls(ctx, store.LLMCallFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			outcome[c.ID] = c
		}
		if c := outcome[stale.ID]; c.Outcome != store.LLMCallLost || c.ErrorReason != "worker_died" || !strings.Contains(c.Error, "usage is unknown") {
			t.Errorf("stale call %+v; want lost", c)
		}
		if c := outcome[fresh.ID]; c.Outcome != store.LLMCallRunning || c.ErrorReason != "" {
			t.Errorf("fresh call %+v; want still running", c)
		}
		rep, err := ledger.Report(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		reserved := int64(-1)
		for _, k := range rep {
			if k.Key == budget.KeyGlobal {
				reserved = k.ReservedTokens
			}
		}
		if reserved != 100 {
			t.Errorf("global reserves %d tokens after the sweep, want the fresh call's 100", reserved)
		}
		for _, want := range []string{
			`msg="released budget reservations that were never settled" count=1`,
			`msg="marked llm calls lost: their worker stopped before they returned" count=1`,
		} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("logs lack %q:\n%s", want, logs.String())
			}
		}
	})
}
