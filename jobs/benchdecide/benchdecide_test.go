package benchdecide_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/benchdecide"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/workflows"
)

// decider stands in for the benches service: it decides in the step's
// transaction, failing the first fail calls.
type decider struct {
	mu    sync.Mutex
	fail  int
	calls int
	runs  []string
	at    []time.Time
}

func (d *decider) DecideTx(_ context.Context, tx *sql.Tx, run string, now time.Time) (bench.Decision, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	if tx == nil {
		return bench.Decision{}, errors.New("no transaction")
	}
	if d.calls <= d.fail {
		return bench.Decision{}, errors.New("database is busy")
	}
	d.runs, d.at = append(d.runs, run), append(d.at, now)
	return bench.Decision{RunID: run, Status: bench.Accepted, CreatedAt: now}, nil
}

// bench_decide decides its run in the transaction that completes the
// step, once, at the worker's clock; a failed decide rolls back and is
// retried.
func TestDecideRecordsTheDecision(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		d := &decider{fail: 1}
		reg := engine.NewRegistry(map[string]config.JobOverride{"bench_decide": {Backoff: config.Duration(10 * time.Millisecond)}})
		runner := workflows.New(s, enginetest.Logger())
		benchdecide.Register(reg, runner, &benchdecide.Worker{Service: d, Logger: enginetest.Logger(), Now: func() time.Time { return at }})
		client := enginetest.Start(t, s, reg, enginetest.Config())
		events := enginetest.Events(t, client)
		var runID string
		err := s.InTx(context.Background(), func(tx *sql.Tx) error {
			var err error
			runID, err = runner.Start(context.Background(), tx, client, workflows.Def{Name: "bench", Input: map[string]string{"run": "bench_1"},
				Steps: []workflows.StepDef{{Name: "decide", Args: benchdecide.Args{Run: "bench_1"}}}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		ev := enginetest.WaitFor(t, events, func(ev *river.Event) bool { return ev.Job.Kind == "bench_decide" && ev.Job.FinalizedAt != nil })
		if ev.Job.State != rivertype.JobStateCompleted || ev.Job.Attempt != 2 {
			t.Fatalf("job %s after %d attempts (%v), want completed on the 2nd", ev.Job.State, ev.Job.Attempt, ev.Job.Errors)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if len(d.runs) != 1 || d.runs[0] != "bench_1" || !d.at[0].Equal(at) {
			t.Fatalf("decided %v at %v, want bench_1 once at %s", d.runs, d.at, at)
		}
		run, err := runner.Get(context.Background(), runID)
		if err != nil || run.Status != store.WorkflowSucceeded {
			t.Fatalf("run %+v, %v", run, err)
		}
		var out benchdecide.Output
		if err := json.Unmarshal(run.Steps[0].Output, &out); err != nil || out.Run != "bench_1" {
			t.Errorf("output %s (%v)", run.Steps[0].Output, err)
		}
	})
}
