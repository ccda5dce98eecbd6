package benches_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/jobs/benchcell"
	"github.com/mullhq/mull/jobs/benchdecide"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// clock is a test clock the store reads; Advance moves it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var t0 = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

// scorer says what the test's cell step records for one cell: a score,
// or nil for a failed cell; fail makes the step itself fail (the
// workflow then fails).
type scorer func(a benchcell.Args) (score *float64, fail bool)

// env is a benchmark service over one store, with its workflow's step
// kinds registered as trivial test steps (slice C writes the real ones).
type env struct {
	s       *store.Store
	clock   *clock
	svc     *benches.Service
	harness *harnesses.Service
	mem     *memories.Service
	client  *engine.Client
	events  <-chan *river.Event
}

var cellSpec = engine.Spec{Queue: "default", MaxAttempts: 1, Backoff: 10 * time.Millisecond, Timeout: time.Minute}

func newEnv(t *testing.T, s *store.Store, cfg config.Bench, work bool, score scorer) *env {
	t.Helper()
	e := &env{s: s, clock: &clock{t: t0}}
	s.SetClock(e.clock.Now)
	e.harness = harnesses.New(s, config.Harness{}, nil)
	e.mem = memories.New(s, config.Default().Memory, config.Default().Digest)
	runner := workflows.New(s, enginetest.Logger())
	e.svc = benches.New(s, cfg, e.harness, e.mem, runner, enginetest.Logger())
	reg := engine.NewRegistry(nil)
	workflows.AddStep(reg, runner, cellSpec, e.cellStep(score))
	workflows.AddStep(reg, runner, cellSpec, e.decideStep)
	workflows.Register(reg, runner)
	if work {
		e.client = enginetest.Start(t, s, reg, enginetest.Config())
		e.events = enginetest.Events(t, e.client)
	} else {
		e.client = enginetest.NewClient(t, s, reg, enginetest.Config(), false)
	}
	return e
}

// cellStep reads its input as the real step does, counts an LLM call of
// its job (progress sums them), and records the cell in its completing
// transaction.
func (e *env) cellStep(score scorer) workflows.StepFunc[benchcell.Args] {
	return func(ctx context.Context, step *workflows.Step[benchcell.Args]) (workflows.Result, error) {
		a := step.Args
		in, err := e.svc.CellInput(ctx, a.Run, a.Case, a.Side)
		if err != nil {
			return workflows.Result{}, err
		}
		if err := e.s.InsertLLMCall(ctx, store.LLMCall{ID: fmt.Sprintf("call_%d", step.Job.ID), JobID: step.Job.ID,
			Kind: "bench_cell", Model: "m", PromptTokens: 10, CompletionTokens: 5, CostNanoUSD: 1000, Outcome: "ok",
			CreatedAt: e.s.Now()}); err != nil {
			return workflows.Result{}, err
		}
		v, fail := score(a)
		if fail {
			return workflows.Result{}, errors.New("the test's cell fails")
		}
		c := bench.Cell{RunID: a.Run, Side: a.Side, CaseID: a.Case, Iteration: a.Iteration, Score: v, Status: bench.CellOK,
			SnapshotID: in.Snapshot.ID, StateHash: in.Snapshot.StateHash, CaseHash: in.Case.Hash, Feedback: "fb " + step.Name,
			Evidence: &bench.Evidence{Completed: true, Summary: "ran " + string(in.Snapshot.Kind), Actions: []string{}, Observations: []string{}}}
		if v == nil {
			c.Status, c.FailureReason, c.Evidence, c.Feedback = bench.CellFailed, bench.Timeout, nil, ""
		}
		return workflows.Result{Output: map[string]any{"status": c.Status, "score": v}, Apply: func(ctx context.Context, tx *sql.Tx) error {
			_, err := e.svc.RecordCellTx(ctx, tx, c)
			return err
		}}, nil
	}
}

func (e *env) decideStep(ctx context.Context, step *workflows.Step[benchdecide.Args]) (workflows.Result, error) {
	return workflows.Result{Apply: func(ctx context.Context, tx *sql.Tx) error {
		_, err := e.svc.DecideTx(ctx, tx, step.Args.Run, e.s.Now())
		return err
	}}, nil
}

func str(s string) *string   { return &s }
func num(v float64) *float64 { return &v }
func fixed(v float64) scorer { return func(benchcell.Args) (*float64, bool) { return num(v), false } }
func bySide(ref, cand float64) scorer {
	return func(a benchcell.Args) (*float64, bool) {
		if a.Side == bench.Reference {
			return num(ref), false
		}
		return num(cand), false
	}
}

// addFrozen adds and freezes cases of a set.
func (e *env) addFrozen(t *testing.T, set string, ids ...string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		if _, err := e.svc.AddCase(ctx, benches.CaseInput{ID: id, Set: set, Title: "Case " + id, Statement: "Explain " + id,
			Rubric: "mentions `" + id + "`"}); err != nil {
			t.Fatalf("add case %s: %v", id, err)
		}
		if _, err := e.svc.FreezeCase(ctx, id); err != nil {
			t.Fatalf("freeze %s: %v", id, err)
		}
	}
}

// refine applies a one-edit refinement to scope and returns its record.
func (e *env) refine(t *testing.T, id string, scope harness.Scope, action harness.Action, entry, content string) harness.Refinement {
	t.Helper()
	e.clock.Advance(time.Second)
	ed := harness.Edit{Action: action, Kind: harness.KindMemory, ID: entry, Reason: "test"}
	if action != harness.Delete {
		ed.Content = str(content)
	}
	a, err := e.harness.Apply(context.Background(), harnesses.ApplyRequest{ID: id, Scope: scope,
		Proposal: harness.Proposal{Summary: "s " + id, Edits: []harness.Edit{ed}}, Source: harnesses.ByAdmin})
	if err != nil {
		t.Fatalf("apply %s: %v", id, err)
	}
	if applied, _ := a.Refinement.Counts(); applied != 1 {
		t.Fatalf("refinement %s applied %d edits: %+v", id, applied, a.Refinement.Edits)
	}
	return a.Refinement
}

func (e *env) capture(t *testing.T, id, session string) bench.Snapshot {
	t.Helper()
	e.clock.Advance(time.Second)
	sn, err := e.svc.Capture(context.Background(), benches.CaptureRequest{ID: id, Session: session})
	if err != nil {
		t.Fatalf("capture %s: %v", id, err)
	}
	return sn
}

// waitDecided waits until the run's decide step's job completes.
func (e *env) waitDecided(t *testing.T) {
	t.Helper()
	enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
		return ev.Job.Kind == "bench_decide" && ev.Kind == river.EventKindJobCompleted
	})
}

// count counts a table's rows.
func count(t *testing.T, s *store.Store, table string) int {
	t.Helper()
	var n int
	if err := s.DB.QueryRow(`select count(*) from ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// codeOf is the code of a *benches.CodedError ("" for another error).
func codeOf(err error) string {
	var ce *benches.CodedError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}
