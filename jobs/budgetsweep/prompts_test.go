package budgetsweep_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/jobs/budgetsweep"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Calls keep their messages for llm.keep_prompts: the sweep prunes those
// of older calls and leaves the rest of each record; 0 prunes them all.
func TestSweepPrunesKeptPrompts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
		now := t0
		s.SetClock(func() time.Time { return now })
		ledger, err := budget.New(s, config.Budget{})
		if err != nil {
			t.Fatal(err)
		}
		msgs := []store.LLMMessage{{Role: "system", Content: "fixed"}, {Role: "user", Content: "excerpt\nline 2"}}
		call := func(start time.Time) string {
			c := store.LLMCall{Kind: "retro_session", Model: "m", CreatedAt: start, Messages: msgs}
			if err := s.StartLLMCall(ctx, &c); err != nil {
				t.Fatal(err)
			}
			c.Outcome, c.PromptTokens = "ok", 7
			if err := s.FinishLLMCall(ctx, c); err != nil {
				t.Fatal(err)
			}
			return c.ID
		}
		old, recent := call(t0), call(t0.Add(6*24*time.Hour))
		// A call whose start write failed is inserted whole by its finish.
		whole := store.LLMCall{ID: "call_whole", Kind: "retro_session", Model: "m", Outcome: "ok", CreatedAt: t0.Add(6 * 24 * time.Hour), Messages: msgs}
		if err := s.FinishLLMCall(ctx, whole); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{old, recent, whole.ID} {
			if c, err := s.GetLLMCall(ctx, id); err != nil || !reflect.DeepEqual(c.Messages, msgs) || c.Outcome != "ok" {
				t.Fatalf("call %s before the sweep: %+v, %v; want its messages kept", id, c, err)
			}
		}
		if _, err := s.GetLLMCall(ctx, "call_nope"); !errors.Is(err, store.ErrNoLLMCall) {
			t.Fatalf("unknown call: %v", err)
		}

		now = t0.Add(7*24*time.Hour + time.Minute)
		w := &budgetsweep.Worker{Ledger: ledger, Store: s, Hold: time.Hour, KeepPrompts: 7 * 24 * time.Hour,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if err := w.Work(ctx, &river.Job[budgetsweep.Args]{}); err != nil {
			t.Fatal(err)
		}
		if c, _ := s.GetLLMCall(ctx, old); c.Messages != nil || c.PromptTokens != 7 || c.Outcome != "ok" {
			t.Errorf("call older than 7 days: %+v; want its messages pruned, the record kept", c)
		}
		if c, _ := s.GetLLMCall(ctx, recent); !reflect.DeepEqual(c.Messages, msgs) {
			t.Errorf("call of 1 day ago lost its messages: %+v", c)
		}

		w.KeepPrompts = 0
		if err := w.Work(ctx, &river.Job[budgetsweep.Args]{}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{recent, whole.ID} {
			if c, _ := s.GetLLMCall(ctx, id); c.Messages != nil {
				t.Errorf("keep_prompts 0: call %s still has %+v", id, c.Messages)
			}
		}
	})
}
