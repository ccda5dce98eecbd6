package workflows_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/workflows"
)

// calcArgs is the test step kind: each step outputs its Value plus the
// outputs of the steps it comes after.
type calcArgs struct {
	Value int `json:"value"`
}

func (calcArgs) Kind() string { return "test_calc" }

var calcSpec = engine.Spec{MaxAttempts: 2, Backoff: 10 * time.Millisecond, Timeout: 30 * time.Second}

// markerArgs is a plain job a step's Apply inserts, to see which of its
// transactions committed.
type markerArgs struct {
	Step string `json:"step"`
}

func (markerArgs) Kind() string { return "test_marker" }

type markerWorker struct {
	river.WorkerDefaults[markerArgs]
}

func (markerWorker) Work(context.Context, *river.Job[markerArgs]) error { return nil }

func sum(step *workflows.Step[calcArgs]) (workflows.Result, error) {
	total := step.Args.Value
	for _, dep := range step.Deps() {
		var v int
		if err := step.Output(dep, &v); err != nil {
			return workflows.Result{}, err
		}
		total += v
	}
	return workflows.Result{Output: total}, nil
}

// diamond has four levels, fan-out and fan-in:
//
//	a → b, c, d;   b, c → e;   c, d → f;   e, f → g
//
// so g outputs 7 + (5+3+4) + (6+4+5) = 34.
func diamond() workflows.Def {
	c := func(v int) calcArgs { return calcArgs{Value: v} }
	return workflows.Def{Name: "diamond", Input: map[string]int{"seed": 1}, Steps: []workflows.StepDef{
		{Name: "a", Args: c(1)},
		{Name: "b", Args: c(2), After: []string{"a"}},
		{Name: "c", Args: c(3), After: []string{"a"}},
		{Name: "d", Args: c(4), After: []string{"a"}},
		{Name: "e", Args: c(5), After: []string{"b", "c"}},
		{Name: "f", Args: c(6), After: []string{"c", "d"}},
		{Name: "g", Args: c(7), After: []string{"e", "f"}},
	}}
}

const diamondTotal = 34

type env struct {
	s      *store.Store
	r      *workflows.Runner
	reg    *engine.Registry
	client *engine.Client
	events <-chan *river.Event
}

// newEnv registers the test kinds and workflows.Register's, and starts a
// working client unless work is false.
func newEnv(t *testing.T, s *store.Store, fn workflows.StepFunc[calcArgs], work bool) *env {
	t.Helper()
	e := &env{s: s, r: workflows.New(s, enginetest.Logger()), reg: engine.NewRegistry(nil)}
	workflows.AddStep(e.reg, e.r, calcSpec, fn)
	engine.Add(e.reg, engine.Spec{}, &markerWorker{})
	workflows.Register(e.reg, e.r)
	if work {
		e.client = enginetest.Start(t, s, e.reg, enginetest.Config())
		e.events = enginetest.Events(t, e.client)
	} else {
		e.client = enginetest.NewClient(t, s, e.reg, enginetest.Config(), false)
	}
	return e
}

func (e *env) start(t *testing.T, def workflows.Def) string {
	t.Helper()
	var id string
	err := e.s.InTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		id, err = e.r.Start(context.Background(), tx, e.client, def)
		return err
	})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return id
}

func (e *env) get(t *testing.T, id string) (store.WorkflowRun, map[string]store.WorkflowStep) {
	t.Helper()
	run, err := e.r.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	steps := map[string]store.WorkflowStep{}
	for _, st := range run.Steps {
		steps[st.Name] = st
	}
	return run, steps
}

// waitRun re-reads the run after each River event until it has status.
func (e *env) waitRun(t *testing.T, id, status string) (store.WorkflowRun, map[string]store.WorkflowStep) {
	t.Helper()
	patience := testwait.Patience(t)
	deadline := time.After(patience)
	for {
		run, steps := e.get(t, id)
		if run.Status == status {
			return run, steps
		}
		select {
		case <-e.events:
		case <-deadline:
			t.Fatalf("run %s is %s after %s; want %s (error %q)", id, run.Status, patience, status, run.Error)
		}
	}
}

// waitJob re-reads a job after each River event until it is in state.
func (e *env) waitJob(t *testing.T, id int64, state rivertype.JobState) {
	t.Helper()
	patience := testwait.Patience(t)
	deadline := time.After(patience)
	for {
		job, err := e.client.JobGet(context.Background(), id)
		if err != nil {
			t.Fatalf("job %d: %v", id, err)
		}
		if job.State == state {
			return
		}
		select {
		case <-e.events:
		case <-deadline:
			t.Fatalf("job %d is %s after %s; want %s", id, job.State, patience, state)
		}
	}
}

func (e *env) jobs(t *testing.T, kind string) []*rivertype.JobRow {
	t.Helper()
	res, err := e.client.JobList(context.Background(), river.NewJobListParams().Kinds(kind).First(1000))
	if err != nil {
		t.Fatal(err)
	}
	return res.Jobs
}

func output(t *testing.T, st store.WorkflowStep) int {
	t.Helper()
	var v int
	if err := json.Unmarshal(st.Output, &v); err != nil {
		t.Fatalf("step %s output %q: %v", st.Name, st.Output, err)
	}
	return v
}

// counter counts calls per step.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// barrier holds each named step until all have arrived, so their
// completions race.
type barrier struct {
	arrived map[string]chan struct{}
	once    map[string]*sync.Once
}

func newBarrier(names ...string) *barrier {
	b := &barrier{arrived: map[string]chan struct{}{}, once: map[string]*sync.Once{}}
	for _, n := range names {
		b.arrived[n], b.once[n] = make(chan struct{}), &sync.Once{}
	}
	return b
}

func (b *barrier) arrive(ctx context.Context, name string) error {
	if _, ok := b.arrived[name]; !ok {
		return nil
	}
	b.once[name].Do(func() { close(b.arrived[name]) })
	for _, ch := range b.arrived {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func TestFanOutFanIn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var calls counter
		fanIn := newBarrier("b", "c") // e's parents finish together
		var applyFailed, crashed atomic.Bool
		e := newEnv(t, s, func(ctx context.Context, step *workflows.Step[calcArgs]) (workflows.Result, error) {
			calls.add(step.Name)
			var in map[string]int
			if err := step.Input(&in); err != nil || in["seed"] != 1 {
				return workflows.Result{}, fmt.Errorf("input %v, %v", in, err)
			}
			var v int
			if err := step.Output("a", &v); step.Name == "g" && err == nil {
				return workflows.Result{}, errors.New("g read the output of a, which it does not come after")
			}
			if err := fanIn.arrive(ctx, step.Name); err != nil {
				return workflows.Result{}, err
			}
			res, err := sum(step)
			if step.Name == "d" {
				// d's Apply writes a marker job, then fails its first time:
				// the marker must vanish with the rest of that transaction.
				res.Apply = func(ctx context.Context, tx *sql.Tx) error {
					client := river.ClientFromContext[*sql.Tx](ctx)
					if _, err := client.InsertTx(ctx, tx, markerArgs{Step: step.Name}, nil); err != nil {
						return err
					}
					if applyFailed.CompareAndSwap(false, true) {
						return errors.New("apply failed on purpose")
					}
					return nil
				}
			}
			return res, err
		}, true)
		// a's first completion dies just before commit, after it enqueued
		// b, c and d: none of that may survive, and nothing may double.
		e.r.SetBeforeCommit(func(step string) error {
			if step == "a" && crashed.CompareAndSwap(false, true) {
				return errors.New("crash before commit")
			}
			return nil
		})

		id := e.start(t, diamond())
		if !strings.HasPrefix(id, "wf_") {
			t.Fatalf("run id %q", id)
		}
		run, steps := e.waitRun(t, id, store.WorkflowSucceeded)
		if run.Error != "" || run.FinishedAt == nil || string(run.Input) != `{"seed":1}` {
			t.Fatalf("run = %+v", run)
		}
		if got := output(t, steps["g"]); got != diamondTotal {
			t.Fatalf("g output %d; want %d", got, diamondTotal)
		}
		wantAttempts := map[string]int{"a": 2, "d": 2}
		jobIDs := map[int64]bool{}
		finished := map[int64]time.Time{} // by job: when its step finished
		for _, st := range run.Steps {
			if st.Status != store.WorkflowStepSucceeded || st.JobID == 0 || st.StartedAt == nil || st.FinishedAt == nil {
				t.Errorf("step %s = %+v", st.Name, st)
			}
			if want := max(wantAttempts[st.Name], 1); st.Attempts != want || calls.get(st.Name) != want {
				t.Errorf("step %s: %d attempts, %d calls; want %d", st.Name, st.Attempts, calls.get(st.Name), want)
			}
			for _, dep := range st.Deps {
				if st.StartedAt.Before(*steps[dep].FinishedAt) {
					t.Errorf("step %s started %s, before %s finished %s", st.Name, st.StartedAt, dep, steps[dep].FinishedAt)
				}
			}
			jobIDs[st.JobID] = true
			finished[st.JobID] = *st.FinishedAt
		}
		// Exactly one job per step, every one completed: none lost, none doubled.
		stepJobs := e.jobs(t, "test_calc")
		if len(stepJobs) != len(run.Steps) {
			t.Fatalf("%d step jobs for %d steps", len(stepJobs), len(run.Steps))
		}
		for _, j := range stepJobs {
			if !jobIDs[j.ID] || j.State != rivertype.JobStateCompleted || !slices.Contains(j.Tags, id) {
				t.Errorf("job %d: state %s, tags %v, owned by a step: %v", j.ID, j.State, j.Tags, jobIDs[j.ID])
			}
			// The step's transaction completes its job itself
			// (store.CompleteJobTx): River must read its time back.
			if j.FinalizedAt == nil || j.FinalizedAt.Sub(finished[j.ID]).Abs() > time.Minute {
				t.Errorf("job %d finalized at %v, its step finished at %s", j.ID, j.FinalizedAt, finished[j.ID])
			}
		}
		if markers := e.jobs(t, "test_marker"); len(markers) != 1 {
			t.Fatalf("%d marker jobs; want 1 (the rolled-back Apply's must be gone)", len(markers))
		}

		// An operator retrying a completed step job changes nothing.
		g := steps["g"]
		retried, err := e.client.JobRetry(ctx, g.JobID)
		if err != nil {
			t.Fatal(err)
		}
		enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
			return ev.Job.ID == g.JobID && ev.Job.Attempt > retried.Attempt && ev.Job.State == rivertype.JobStateCompleted
		})
		if run, _ := e.get(t, id); calls.get("g") != 1 || run.Status != store.WorkflowSucceeded {
			t.Fatalf("after retrying a completed step: %d calls of g, run %s", calls.get("g"), run.Status)
		}
		if err := e.r.Cancel(ctx, e.client, id); !errors.Is(err, workflows.ErrFinished) {
			t.Fatalf("cancel a succeeded run = %v; want ErrFinished", err)
		}

		// The read API.
		for f, want := range map[store.WorkflowFilter]int{
			{Status: store.WorkflowSucceeded}: 1, {Name: "diamond"}: 1, {Name: "other"}: 0, {Status: store.WorkflowFailed}: 0,
		} {
			if runs, err := e.r.List(ctx, f); err != nil || len(runs) != want {
				t.Errorf("list %+v = %d runs, %v; want %d", f, len(runs), err, want)
			}
		}
		if _, err := e.r.Get(ctx, "wf_nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("get unknown = %v; want store.ErrNotFound", err)
		}
	})
}

func TestStartRejectsBadDefinitions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, func(ctx context.Context, st *workflows.Step[calcArgs]) (workflows.Result, error) { return sum(st) }, false)
		cycle := diamond()
		cycle.Steps[0].After = []string{"g"}
		notAStep := diamond()
		notAStep.Steps[3].Args = markerArgs{}
		for want, def := range map[string]workflows.Def{
			"no root step": cycle,
			`step "d": job kind "test_marker" is not a workflow step`: notAStep,
		} {
			err := s.InTx(context.Background(), func(tx *sql.Tx) error {
				_, err := e.r.Start(context.Background(), tx, e.client, def)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("start = %v; want an error containing %q", err, want)
			}
		}
		if runs, _ := e.r.List(context.Background(), store.WorkflowFilter{}); len(runs) != 0 || len(e.jobs(t, "test_calc")) != 0 {
			t.Fatalf("a rejected start left %d runs behind", len(runs))
		}
	})
}

func TestFailureAndOperatorReplay(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var healed atomic.Bool
		e := newEnv(t, s, func(ctx context.Context, step *workflows.Step[calcArgs]) (workflows.Result, error) {
			if step.Name == "c" && !healed.Load() {
				return workflows.Result{}, fmt.Errorf("boom on attempt %d", step.Attempt)
			}
			return sum(step)
		}, true)
		id := e.start(t, diamond())

		run, steps := e.waitRun(t, id, store.WorkflowFailed)
		if run.Error != "step c: boom on attempt 2" || run.FinishedAt == nil {
			t.Fatalf("failed run = %+v", run)
		}
		c := steps["c"]
		if c.Status != store.WorkflowStepFailed || c.Attempts != 2 || c.Error != "boom on attempt 2" {
			t.Fatalf("step c = %+v", c)
		}
		if steps["a"].Status != store.WorkflowStepSucceeded {
			t.Fatalf("step a = %+v", steps["a"])
		}
		for _, name := range []string{"e", "f", "g"} {
			if st := steps[name]; st.Status != store.WorkflowStepCancelled || st.JobID != 0 {
				t.Errorf("step %s = %+v; want cancelled, never enqueued", name, st)
			}
		}
		for _, name := range []string{"b", "d"} { // c's siblings may or may not have started
			if st := steps[name]; !slices.Contains([]string{store.WorkflowStepSucceeded, store.WorkflowStepCancelled, store.WorkflowStepRunning}, st.Status) {
				t.Errorf("step %s = %+v", name, st)
			}
		}
		e.waitJob(t, c.JobID, rivertype.JobStateDiscarded) // River marks it after the run failed

		// The operator fixes the cause and retries the dead letter: the run
		// comes back and finishes.
		healed.Store(true)
		if _, err := e.client.JobRetry(ctx, c.JobID); err != nil {
			t.Fatal(err)
		}
		run, steps = e.waitRun(t, id, store.WorkflowSucceeded)
		if run.Error != "" || output(t, steps["g"]) != diamondTotal {
			t.Fatalf("replayed run = %+v, g = %s", run, steps["g"].Output)
		}
		if c := steps["c"]; c.Attempts != 3 || c.Error != "" || c.Status != store.WorkflowStepSucceeded {
			t.Fatalf("step c after replay = %+v", c)
		}
		for _, st := range run.Steps {
			if st.Status != store.WorkflowStepSucceeded {
				t.Errorf("step %s is %s", st.Name, st.Status)
			}
		}
	})
}

func TestCancel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		started := make(chan struct{})
		var once sync.Once
		e := newEnv(t, s, func(ctx context.Context, step *workflows.Step[calcArgs]) (workflows.Result, error) {
			if step.Name != "a" {
				return sum(step)
			}
			once.Do(func() { close(started) })
			<-ctx.Done() // a works until cancelled
			return workflows.Result{}, ctx.Err()
		}, true)
		id := e.start(t, diamond())
		select {
		case <-started:
		case <-testwait.After(t):
			t.Fatal("step a never started")
		}
		_, steps := e.get(t, id)
		if err := e.r.Cancel(ctx, e.client, id); err != nil {
			t.Fatal(err)
		}
		if job := enginetest.WaitFinal(t, e.events, steps["a"].JobID); job.State != rivertype.JobStateCancelled {
			t.Fatalf("a's job ended %s; want cancelled", job.State)
		}
		run, _ := e.get(t, id)
		if run.Status != store.WorkflowCancelled || run.FinishedAt == nil {
			t.Fatalf("run = %+v", run)
		}
		for _, st := range run.Steps {
			if st.Status != store.WorkflowStepCancelled {
				t.Errorf("step %s is %s; want cancelled", st.Name, st.Status)
			}
		}
		if err := e.r.Cancel(ctx, e.client, id); err != nil {
			t.Fatalf("cancel twice = %v; want nil", err)
		}
		if err := e.r.Cancel(ctx, e.client, "wf_nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("cancel unknown = %v; want store.ErrNotFound", err)
		}
	})
}

func TestReconcile(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		// No worker yet: the runs' root jobs wait, and an operator kills them.
		e := newEnv(t, s, func(ctx context.Context, st *workflows.Step[calcArgs]) (workflows.Result, error) { return sum(st) }, false)
		cancelled := e.start(t, diamond())
		_, steps := e.get(t, cancelled)
		if _, err := e.client.JobCancel(ctx, steps["a"].JobID); err != nil {
			t.Fatal(err)
		}
		for i, want := range []int{1, 0} { // a second sweep finds nothing
			if n, err := e.r.Reconcile(ctx, e.client); err != nil || n != want {
				t.Fatalf("sweep %d repaired %d, %v; want %d", i+1, n, err, want)
			}
		}
		run, steps := e.get(t, cancelled)
		wantErr := fmt.Sprintf("step a: job %d was cancelled", steps["a"].JobID)
		if run.Status != store.WorkflowFailed || run.Error != wantErr || steps["a"].Status != store.WorkflowStepFailed ||
			steps["g"].Status != store.WorkflowStepCancelled {
			t.Fatalf("run = %+v", run)
		}

		// The workflow_reconcile job does the same for a deleted job.
		deleted := e.start(t, diamond())
		_, steps = e.get(t, deleted)
		if _, err := e.client.JobDelete(ctx, steps["a"].JobID); err != nil {
			t.Fatal(err)
		}
		worker := enginetest.Start(t, s, e.reg, enginetest.Config())
		events := enginetest.Events(t, worker)
		res, err := worker.Insert(ctx, workflows.ReconcileArgs{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Job.Queue != "maintenance" {
			t.Fatalf("reconcile job on queue %q", res.Job.Queue)
		}
		if job := enginetest.WaitFinal(t, events, res.Job.ID); job.State != rivertype.JobStateCompleted {
			t.Fatalf("reconcile job ended %s", job.State)
		}
		run, _ = e.get(t, deleted)
		if run.Status != store.WorkflowFailed || !strings.HasSuffix(run.Error, "no longer exists") {
			t.Fatalf("run = %+v", run)
		}
	})
}

func TestDemo(t *testing.T) {
	if _, err := workflows.Demo(0, 0); err == nil {
		t.Fatal("Demo(0 parts) = nil error")
	}
	if _, err := workflows.Demo(1, time.Hour); err == nil {
		t.Fatal("Demo(1 hour of work) = nil error")
	}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, func(ctx context.Context, st *workflows.Step[calcArgs]) (workflows.Result, error) { return sum(st) }, true)
		def, err := workflows.Demo(4, 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		id := e.start(t, def)
		run, steps := e.waitRun(t, id, store.WorkflowSucceeded)
		var out workflows.DemoOutput
		if err := json.Unmarshal(steps["join"].Output, &out); err != nil || out.Value != workflows.DemoTotal(4) {
			t.Fatalf("join output %s (%v); want value %d", steps["join"].Output, err, workflows.DemoTotal(4))
		}
		if len(run.Steps) != 6 || len(steps["join"].Deps) != 4 {
			t.Fatalf("demo run has %d steps, join waits for %v", len(run.Steps), steps["join"].Deps)
		}
	})
}

// wide is split → n parts → join.
func wide(n int) workflows.Def {
	def := workflows.Def{Name: "wide", Input: map[string]int{"seed": 1}, Steps: []workflows.StepDef{{Name: "split", Args: calcArgs{Value: 1}}}}
	var parts []string
	for i := range n {
		parts = append(parts, fmt.Sprintf("p%02d", i))
		def.Steps = append(def.Steps, workflows.StepDef{Name: parts[i], Args: calcArgs{Value: 1}, After: []string{"split"}})
	}
	def.Steps = append(def.Steps, workflows.StepDef{Name: "join", Args: calcArgs{}, After: parts})
	return def
}

// TestWideFanInRace lets every part of a fan-out finish at once, each on
// its own connection on Postgres: the join is enqueued exactly once. Then a
// part that fails for good races its siblings' successes: the join is never
// enqueued, and the operator's retry of that part revives the run, which
// runs the join once.
func TestWideFanInRace(t *testing.T) {
	const n = 8 // fewer than the test client's workers, so all can wait together
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var calls counter
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf("p%02d", i))
		}
		together := newBarrier(names...)
		var failing, healed atomic.Bool
		e := newEnv(t, s, func(ctx context.Context, step *workflows.Step[calcArgs]) (workflows.Result, error) {
			calls.add(step.Name)
			if failing.Load() && step.Name == "p05" && !healed.Load() {
				return workflows.Result{}, fmt.Errorf("boom on attempt %d", step.Attempt)
			}
			if err := together.arrive(ctx, step.Name); err != nil {
				return workflows.Result{}, err
			}
			return sum(step)
		}, true)

		id := e.start(t, wide(n))
		_, steps := e.waitRun(t, id, store.WorkflowSucceeded)
		if got := output(t, steps["join"]); got != n+n {
			t.Fatalf("join output %d; want %d", got, n+n)
		}
		if calls.get("join") != 1 || len(e.jobs(t, "test_calc")) != n+2 {
			t.Fatalf("join ran %d times; %d step jobs for %d steps", calls.get("join"), len(e.jobs(t, "test_calc")), n+2)
		}

		together = newBarrier() // the second run races without holding
		failing.Store(true)
		id = e.start(t, wide(n))
		run, steps := e.waitRun(t, id, store.WorkflowFailed)
		if run.Error != "step p05: boom on attempt 2" {
			t.Fatalf("failed run = %+v", run)
		}
		if join := steps["join"]; join.Status != store.WorkflowStepCancelled || join.JobID != 0 {
			t.Fatalf("join = %+v; want cancelled, never enqueued", join)
		}
		e.waitJob(t, steps["p05"].JobID, rivertype.JobStateDiscarded)
		healed.Store(true)
		if _, err := e.client.JobRetry(ctx, steps["p05"].JobID); err != nil {
			t.Fatal(err)
		}
		_, steps = e.waitRun(t, id, store.WorkflowSucceeded)
		if got := output(t, steps["join"]); got != n+n || calls.get("join") != 2 {
			t.Fatalf("revived join output %d after %d join calls in all; want %d, 2", got, calls.get("join"), n+n)
		}
	})
}
