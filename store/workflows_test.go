package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func newRun(id, name string) store.WorkflowRun {
	return store.WorkflowRun{
		ID: id, Name: name, Status: store.WorkflowRunning, Input: json.RawMessage(`{"n":1}`),
		Steps: []store.WorkflowStep{
			{Name: "a", Kind: "k", Args: json.RawMessage(`{"step":"a"}`), Status: store.WorkflowStepPending},
			{Name: "b", Kind: "k", Args: json.RawMessage(`{"step":"b"}`), Deps: []string{"a"}, Status: store.WorkflowStepPending},
			{Name: "c", Kind: "k", Args: json.RawMessage(`{"step":"c"}`), Deps: []string{"a", "b"}, Status: store.WorkflowStepPending},
		},
	}
}

func TestWorkflowRows(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
		now := t0
		s.SetClock(func() time.Time { return now })
		inTx := func(fn func(tx *sql.Tx) error) {
			t.Helper()
			if err := s.InTx(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		inTx(func(tx *sql.Tx) error { return s.InsertWorkflowRun(ctx, tx, newRun("wf_1", "alpha")) })
		now = t0.Add(time.Minute)
		inTx(func(tx *sql.Tx) error { return s.InsertWorkflowRun(ctx, tx, newRun("wf_2", "beta")) })

		// Claim is exclusive: a second claim of the same step does nothing.
		inTx(func(tx *sql.Tx) error {
			if _, err := s.LockWorkflowRun(ctx, tx, "wf_1"); err != nil {
				return err
			}
			for i, want := range [][]string{{"a"}, nil} {
				got, err := s.ClaimReadyWorkflowSteps(ctx, tx, "wf_1", "")
				if err != nil || !slices.Equal(stepNames(got), want) {
					t.Errorf("claim %d = %v, %v; want %v", i+1, stepNames(got), err, want)
				}
			}
			if err := s.SetWorkflowStepJob(ctx, tx, "wf_1", "a", 42); err != nil {
				return err
			}
			if err := s.StartWorkflowStep(ctx, tx, "wf_1", "a", 2); err != nil {
				return err
			}
			for i, want := range []bool{true, false} { // a success is recorded once
				status, ok, err := s.SucceedWorkflowStep(ctx, tx, "wf_1", "a", json.RawMessage(`{"v":3}`))
				if err != nil || ok != want || (ok && status != store.WorkflowRunning) {
					t.Errorf("succeed %d = %q, %v, %v; want the run's status, %v", i+1, status, ok, err, want)
				}
			}
			return nil
		})

		run, err := s.GetWorkflowRun(ctx, "wf_1")
		if err != nil {
			t.Fatal(err)
		}
		if run.Name != "alpha" || run.Status != store.WorkflowRunning || string(run.Input) != `{"n":1}` ||
			!run.CreatedAt.Equal(t0) || run.CreatedAt.Location() != time.UTC || run.FinishedAt != nil {
			t.Fatalf("run = %+v", run)
		}
		if names := stepNames(run.Steps); !slices.Equal(names, []string{"a", "b", "c"}) {
			t.Fatalf("steps in order %v; want a, b, c", names)
		}
		a, c := run.Steps[0], run.Steps[2]
		if a.Status != store.WorkflowStepSucceeded || a.JobID != 42 || a.Attempts != 2 || string(a.Output) != `{"v":3}` ||
			a.StartedAt == nil || !a.StartedAt.Equal(now) || a.FinishedAt == nil || string(a.Args) != `{"step":"a"}` {
			t.Fatalf("step a = %+v", a)
		}
		if !slices.Equal(c.Deps, []string{"a", "b"}) || c.JobID != 0 || c.Output != nil || c.StartedAt != nil {
			t.Fatalf("step c = %+v", c)
		}

		inTx(func(tx *sql.Tx) error {
			outs, err := s.WorkflowStepOutputs(ctx, tx, "wf_1", []string{"a", "b"})
			if err != nil {
				return err
			}
			if len(outs) != 1 || string(outs["a"]) != `{"v":3}` {
				t.Errorf("outputs = %v; want only a's", outs)
			}
			return nil
		})

		// a's success unblocks b (its last dependency) but not c (which
		// waits for b too); a is no leaf, so the run is not touched.
		inTx(func(tx *sql.Tx) error {
			u, err := s.UnblockWorkflowDependents(ctx, tx, "wf_1", "a")
			if err != nil || u != (store.Unblocked{Dependents: 2, Ready: 1}) {
				t.Errorf("unblock after a = %+v, %v; want 2 dependents, 1 ready", u, err)
			}
			got, err := s.ClaimReadyWorkflowSteps(ctx, tx, "wf_1", "a")
			if err != nil || !slices.Equal(stepNames(got), []string{"b"}) || string(got[0].Args) != `{"step":"b"}` || got[0].Kind != "k" {
				t.Errorf("claim after a = %+v, %v; want b", got, err)
			}
			return s.SetWorkflowStepJobs(ctx, tx, "wf_1", map[string]int64{"b": 43})
		})
		// Active steps are the enqueued and running ones with a job.
		active, err := s.ActiveWorkflowSteps(ctx)
		if err != nil || len(active) != 1 || active[0].Name != "b" || active[0].JobID != 43 {
			t.Fatalf("active = %+v, %v; want step b with job 43", active, err)
		}

		// Failing: cancel what has not finished, then requeue it on revival.
		inTx(func(tx *sql.Tx) error {
			if err := s.SetWorkflowRunStatus(ctx, tx, "wf_1", store.WorkflowFailed, "step b: boom"); err != nil {
				return err
			}
			jobs, err := s.CancelWorkflowSteps(ctx, tx, "wf_1", "not started", store.WorkflowStepPending, store.WorkflowStepEnqueued)
			if !slices.Equal(jobs, []int64{43}) {
				t.Errorf("cancelled steps' jobs %v; want b's, 43 (c has none)", jobs)
			}
			return err
		})
		run, _ = s.GetWorkflowRun(ctx, "wf_1")
		if run.Status != store.WorkflowFailed || run.Error != "step b: boom" || run.FinishedAt == nil ||
			run.Steps[1].Status != store.WorkflowStepCancelled || run.Steps[1].Error != "not started" {
			t.Fatalf("after failing: %+v", run)
		}
		inTx(func(tx *sql.Tx) error {
			if err := s.SetWorkflowRunStatus(ctx, tx, "wf_1", store.WorkflowRunning, ""); err != nil {
				return err
			}
			return s.RequeueWorkflowSteps(ctx, tx, "wf_1")
		})
		run, _ = s.GetWorkflowRun(ctx, "wf_1")
		if run.Status != store.WorkflowRunning || run.FinishedAt != nil || run.Steps[0].Status != store.WorkflowStepSucceeded ||
			run.Steps[1].Status != store.WorkflowStepPending || run.Steps[1].JobID != 0 {
			t.Fatalf("after requeue: %+v", run)
		}

		// Listing: newest first, filtered, limited.
		for _, tc := range []struct {
			f    store.WorkflowFilter
			want []string
		}{
			{store.WorkflowFilter{}, []string{"wf_2", "wf_1"}},
			{store.WorkflowFilter{Limit: 1}, []string{"wf_2"}},
			{store.WorkflowFilter{Name: "alpha"}, []string{"wf_1"}},
			{store.WorkflowFilter{Status: store.WorkflowRunning, Name: "beta"}, []string{"wf_2"}},
			{store.WorkflowFilter{Status: store.WorkflowSucceeded}, nil},
		} {
			runs, err := s.ListWorkflowRuns(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range runs {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, tc.want) {
				t.Errorf("list %+v = %v; want %v", tc.f, ids, tc.want)
			}
		}

		if _, err := s.GetWorkflowRun(ctx, "wf_nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("get unknown = %v; want ErrNotFound", err)
		}
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			_, err := s.LockWorkflowRun(ctx, tx, "wf_nope")
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("lock unknown = %v; want ErrNotFound", err)
		}
	})
}

func stepNames(steps []store.WorkflowStep) []string {
	var out []string
	for _, st := range steps {
		out = append(out, st.Name)
	}
	return out
}

// TestWorkflowUnblockRace finishes the dependencies of the same steps at
// once, each in its own transaction (on Postgres, its own connection):
// exactly one sees each dependent ready, whether its dependencies share one
// bucket or are dealt into several, and dependencies with dependents in
// common, listed in opposite orders, never deadlock.
func TestWorkflowUnblockRace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		step := func(name string, deps ...string) store.WorkflowStep {
			return store.WorkflowStep{Name: name, Kind: "k", Args: json.RawMessage(`{}`), Deps: deps, Status: store.WorkflowStepPending}
		}
		var roots []string
		var steps []store.WorkflowStep
		for i := range 9 {
			roots = append(roots, fmt.Sprintf("d%d", i))
			steps = append(steps, step(roots[i]))
		}
		// w's nine dependencies fill three buckets; x and z wait for the
		// same two, listed in opposite orders.
		steps = append(steps, step("w", roots...), step("x", "d0", "d1"), step("z", "d1", "d0"))
		want := map[string]int{"d0": 3, "d1": 3}
		const rounds = 10
		for round := range rounds {
			id := fmt.Sprintf("wf_race%d", round)
			run := store.WorkflowRun{ID: id, Name: "race", Status: store.WorkflowRunning, Input: json.RawMessage(`{}`), Steps: steps}
			if err := s.InTx(ctx, func(tx *sql.Tx) error { return s.InsertWorkflowRun(ctx, tx, run) }); err != nil {
				t.Fatal(err)
			}
			start := make(chan struct{})
			type result struct {
				dep string
				u   store.Unblocked
				err error
			}
			results := make(chan result, len(roots))
			for _, dep := range roots {
				go func() {
					<-start
					var u store.Unblocked
					err := s.InTx(ctx, func(tx *sql.Tx) error {
						var err error
						u, err = s.UnblockWorkflowDependents(ctx, tx, id, dep)
						return err
					})
					results <- result{dep, u, err}
				}()
			}
			close(start)
			ready := 0
			for range roots {
				r := <-results
				if r.err != nil {
					t.Fatalf("round %d: %s: %v", round, r.dep, r.err)
				}
				if r.u.Dependents != max(want[r.dep], 1) {
					t.Fatalf("round %d: %s has %d dependents; want %d", round, r.dep, r.u.Dependents, max(want[r.dep], 1))
				}
				ready += r.u.Ready
			}
			if ready != 3 {
				t.Fatalf("round %d: %d steps seen ready; want w, x and z once each", round, ready)
			}
		}
	})
}
