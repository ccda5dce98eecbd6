package jobs_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/jobs"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/workflows"
)

// allKinds are every kind mull works: a kind added to jobs.Register must
// be added here, and one dropped fails the test.
var allKinds = []string{
	"bench_cell", "bench_decide", "budget_sweep", "consolidate", "consolidate_derive", "consolidate_merge", "consolidate_sweep",
	"demo_step", "ledger_sweep", "llm_probe", "probe", "refine_review", "reflect_task", "retro_error", "retro_session", "session_idle", "workflow_reconcile",
}

func register(t *testing.T, s *store.Store, edit func(*config.Config)) (*engine.Registry, jobs.Wiring, config.Config) {
	t.Helper()
	l := llmtest.New(t, s, llmtest.Options{Edit: edit})
	reg := engine.NewRegistry(nil)
	w := jobs.Register(reg, jobs.Deps{Store: s, Logger: enginetest.Logger(), LLM: l.LLM, Ledger: l.Ledger,
		Runner: workflows.New(s, enginetest.Logger()), Config: l.Config})
	return reg, w, l.Config
}

// jobs.Register alone wires every kind: each has a spec and a worker (River
// refuses to insert a kind without one), the built-in cron entries are the
// ones the kinds declared, each naming a registered kind, and the ingest
// hooks are theirs, enqueueing with the client built over the registry.
func TestRegister(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		reg, w, cfg := register(t, s, nil)
		var kinds []string
		for _, e := range reg.Specs() {
			kinds = append(kinds, e.Kind)
			if e.Queue == "" || e.MaxAttempts == 0 || e.Timeout == 0 {
				t.Errorf("kind %s has no effective spec: %+v", e.Kind, e.Spec)
			}
		}
		if !slices.Equal(kinds, allKinds) {
			t.Fatalf("registered kinds %v, want %v", kinds, allKinds)
		}
		var llmKinds []string
		for _, e := range reg.Specs() {
			if e.LLM {
				llmKinds = append(llmKinds, e.Kind)
			}
		}
		if want := []string{"bench_cell", "consolidate_derive", "consolidate_merge", "llm_probe", "refine_review", "reflect_task", "retro_error", "retro_session"}; !slices.Equal(llmKinds, want) {
			t.Errorf("kinds that call DeepSeek %v, want %v", llmKinds, want)
		}

		if reg.Client() != nil {
			t.Fatal("registry has a client before NewClient")
		}
		client := enginetest.NewClient(t, s, reg, cfg, false)
		if reg.Client() != client {
			t.Fatal("registry's client is not the one built over it")
		}
		// Every kind inserts: River checks its worker is registered.
		errRollback := errors.New("rollback")
		err := s.InTx(context.Background(), func(tx *sql.Tx) error {
			for _, k := range kinds {
				args, _ := engine.CronInsert(config.Cron{Name: "t", Kind: k, Args: "{}"}, time.Second)
				if _, err := client.InsertTx(context.Background(), tx, args, nil); err != nil {
					return fmt.Errorf("insert %s: %w", k, err)
				}
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatal(err)
		}

		want := []config.Cron{
			{Name: "workflow-reconcile", Kind: "workflow_reconcile", Schedule: "@every 1m", Args: "{}"},
			{Name: "budget-sweep", Kind: "budget_sweep", Schedule: "@every 5m", Args: "{}"},
			{Name: "session-idle", Kind: "session_idle", Schedule: "@every 1m", Args: "{}"},
			{Name: "consolidate-sweep", Kind: "consolidate_sweep", Schedule: cfg.Consolidate.Schedule, Args: "{}"},
			{Name: "ledger-sweep", Kind: "ledger_sweep", Schedule: "@every 1m", Args: "{}"},
		}
		if !slices.Equal(w.Cron, want) {
			t.Errorf("built-in cron %+v, want %+v", w.Cron, want)
		}
		if _, err := engine.Periodic(w.Cron, reg); err != nil {
			t.Errorf("built-in cron does not build: %v", err)
		}
		if se, ae := reg.Hooked(); se != 3 || ae != 1 {
			t.Errorf("hooks: %d session-end, %d agent-error; want 3 (retros, consolidation, refine_review's drain) and 1 (retro_error)", se, ae)
		}
		if n := reg.TurnHooked(); n != 2 {
			t.Errorf("hooks: %d turn-end; want 2 (reflect_task's nudge and fallback, refine_review's gate)", n)
		}
		if n := reg.EventHooks(events.CompactionEnd); n != 1 {
			t.Errorf("hooks: %d compaction-end; want 1 (refine_review's gate)", n)
		}
		if w.Ingest == nil || w.Hooks.SessionEnded == nil || w.Hooks.AgentError == nil || w.Hooks.Event == nil || w.Hooks.Hooked == nil || w.Hooks.Client == nil ||
			w.Hooks.MaxSessionAge != cfg.Learn.MaxSessionAge.D() {
			t.Errorf("wiring incomplete: %+v", w)
		}

		// The ingest service's hooks are the kinds': a primary session's
		// error schedules a retro_error, its end a retro_session, enqueued
		// with the registry's client (no UseClient anywhere).
		id := "jobs-session"
		t0 := s.Now().Add(-time.Minute).Truncate(time.Second)
		mk := func(n int, typ events.Type, payload string) events.Event {
			return events.Event{ID: fmt.Sprintf("%s-%d", id, n), Type: typ, SessionID: id, Workspace: "/w",
				Time: t0.Add(time.Duration(n) * time.Second), Payload: json.RawMessage(payload)}
		}
		batch := []events.Event{mk(0, events.SessionStart, `{"title":"t","primary":true}`), mk(1, events.Error, `{"message":"boom"}`)}
		for n := 2; n < 10; n++ {
			batch = append(batch, mk(n, events.ToolResult, `{"tool":"bash","is_error":false}`))
		}
		batch = append(batch, mk(10, events.TurnEnd, `{"turn":1,"reason":"completed"}`), mk(11, events.SessionEnd, `{"reason":"completed"}`))
		if _, err := w.Ingest.IngestBatch(context.Background(), batch, store.SourcePush); err != nil {
			t.Fatal(err)
		}
		// Its turn of 8 tool calls without a task got the missed-task nudge.
		if ns, err := s.ListSessionNotices(context.Background(), s.DB, id); err != nil || len(ns) != 1 || ns[0].Kind != "nudge" {
			t.Errorf("after a turn of 8 tool calls: notices %+v, %v; want the nudge", ns, err)
		}
		got := map[string]int{}
		for _, k := range []string{"retro_error", "retro_session"} {
			res, err := client.JobList(context.Background(), river.NewJobListParams().Kinds(k))
			if err != nil {
				t.Fatal(err)
			}
			got[k] = len(res.Jobs)
		}
		// The error retro due at the session's end folds into its retro.
		if got["retro_session"] != 1 {
			t.Errorf("after a primary session's error and end: jobs %v, want one retro_session", got)
		}
	})
}

// consolidate.schedule "off" declares no sweep entry; the others stay.
func TestRegisterScheduleOff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		_, w, _ := register(t, s, func(c *config.Config) { c.Consolidate.Schedule = "off" })
		for _, c := range w.Cron {
			if c.Kind == "consolidate_sweep" {
				t.Fatalf("consolidate.schedule off still declares %+v", c)
			}
		}
		if len(w.Cron) != 4 {
			t.Fatalf("built-in cron %+v, want the 4 maintenance entries", w.Cron)
		}
	})
}
