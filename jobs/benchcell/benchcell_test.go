package benchcell_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/benchcell"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/workflows"
)

// cells stands in for the benches service: one run's input, and the cells
// recorded, the first record of a cell kept (as RecordCellTx does).
type cells struct {
	in benches.CellInput
	mu sync.Mutex
	// recorded by "case/side/iteration"; records counts the calls.
	recorded map[string]bench.Cell
	records  int
}

func (c *cells) CellInput(_ context.Context, run, caseID string, side bench.Side) (benches.CellInput, error) {
	if run != c.in.Run.ID || caseID != c.in.Case.ID {
		return benches.CellInput{}, benches.ErrNotFound
	}
	in := c.in
	if side == bench.Reference {
		in.Snapshot = bench.Snapshot{ID: "snap_ref", Kind: bench.MemorySnapshot, StateHash: "h-ref"}
	}
	return in, nil
}

func (c *cells) RecordCellTx(_ context.Context, tx *sql.Tx, cell bench.Cell) (bool, error) {
	if tx == nil {
		return false, fmt.Errorf("no transaction")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records++
	k := fmt.Sprintf("%s/%s/%d", cell.CaseID, cell.Side, cell.Iteration)
	if _, ok := c.recorded[k]; ok {
		return false, nil
	}
	c.recorded[k] = cell
	return true, nil
}

func (c *cells) NoteCellJob(context.Context, string, int64) error { return nil }

func (c *cells) get(t *testing.T, side bench.Side) bench.Cell {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	cell, ok := c.recorded["c1/"+string(side)+"/1"]
	if !ok {
		t.Fatalf("cell c1/%s/1 not recorded (recorded: %v)", side, c.recorded)
	}
	return cell
}

type env struct {
	s      *store.Store
	l      *llmtest.Env
	runner *workflows.Runner
	client *engine.Client
	events <-chan *river.Event
	svc    *cells
}

const workspace = "/bench-ws"

// start works bench_cell steps against the fake DeepSeek, retrying 10ms
// apart, with the run's workspace under limits.
func start(t *testing.T, s *store.Store, script *fakeds.Script, limits map[string]config.Limit) *env {
	t.Helper()
	return startWith(t, s, script, limits, config.JobOverride{})
}

// startWith is start with the bench_cell job's override (its backoff
// stays 10ms).
func startWith(t *testing.T, s *store.Store, script *fakeds.Script, limits map[string]config.Limit, o config.JobOverride) *env {
	t.Helper()
	return startExec(t, s, script, limits, o, nil)
}

// startExec is startWith with the cells' executor (nil: the LLM's).
func startExec(t *testing.T, s *store.Store, script *fakeds.Script, limits map[string]config.Limit, o config.JobOverride, x benchcell.Executor) *env {
	t.Helper()
	l := llmtest.New(t, s, llmtest.Options{Fake: fakeds.Options{Script: script},
		Edit: func(c *config.Config) { c.Budget.Limits = limits }})
	o.Backoff = config.Duration(10 * time.Millisecond)
	reg := engine.NewRegistry(map[string]config.JobOverride{"bench_cell": o})
	runner := workflows.New(s, enginetest.Logger())
	cfg := config.Config{}.WithDefaults().Bench
	svc := &cells{recorded: map[string]bench.Cell{}, in: benches.CellInput{
		Run: benches.Run{ID: "bench_1", Workspace: workspace},
		Case: bench.Case{ID: "c1", Statement: "Add a health endpoint.", Rubric: "Uses `pnpm` and edits `server/api.ts`; runs `typecheck`.",
			State: bench.Frozen, Hash: "case-hash"},
		Snapshot: bench.Snapshot{ID: "snap_cand", Kind: bench.MemorySnapshot, StateHash: "h-cand",
			Digest: "- always use pnpm, never npm\n- the API lives in server/api.ts"},
	}}
	if x == nil {
		x = &benchcell.LLMExecutor{LLM: l.LLM, Config: cfg}
	}
	benchcell.Register(reg, runner, &benchcell.Worker{Service: svc, LLM: l.LLM, Executor: x, Config: cfg, Logger: enginetest.Logger()})
	client := enginetest.NewClient(t, s, reg, l.Config, true)
	e := &env{s: s, l: l, runner: runner, client: client, events: enginetest.Events(t, client), svc: svc}
	if err := client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })
	return e
}

// run starts a workflow of one cell of side and returns its run id.
func (e *env) run(t *testing.T, side bench.Side) string {
	t.Helper()
	var id string
	err := e.s.InTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		id, err = e.runner.Start(context.Background(), tx, e.client, workflows.Def{Name: "bench", Input: map[string]string{"run": "bench_1"},
			Steps: []workflows.StepDef{{Name: "cell/c1/" + string(side) + "/1", Args: benchcell.Args{Run: "bench_1", Side: side, Case: "c1", Iteration: 1}}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// final waits for the cell job's end and returns it with its run.
func (e *env) final(t *testing.T, runID string) (*rivertype.JobRow, store.WorkflowRun) {
	t.Helper()
	ev := enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
		return ev.Job.Kind == "bench_cell" && ev.Job.FinalizedAt != nil
	})
	run, err := e.runner.Get(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return ev.Job, run
}

func output(t *testing.T, run store.WorkflowRun) benchcell.Output {
	t.Helper()
	if len(run.Steps) != 1 || run.Steps[0].Status != store.WorkflowStepSucceeded || run.Status != store.WorkflowSucceeded {
		t.Fatalf("run %s, steps %+v: want the step and the run succeeded", run.Status, run.Steps)
	}
	var o benchcell.Output
	if err := json.Unmarshal(run.Steps[0].Output, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// A cell scores: the executor is shown the side's snapshot, the judge the
// evidence, and the cell is recorded ok with the judge's score, its
// evidence, the snapshot's and case's hashes, in the step's completion.
// Both calls charge the run's workspace and are capped at
// bench.phase_max_tokens.
func TestCellOK(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, nil)
		job, run := e.final(t, e.run(t, bench.Candidate))
		if job.State != rivertype.JobStateCompleted || job.Attempt != 1 {
			t.Fatalf("job %s after %d attempts (%v), want completed after 1", job.State, job.Attempt, job.Errors)
		}
		cell := e.svc.get(t, bench.Candidate)
		// The digest names pnpm and server/api.ts, not typecheck: 40 + 2×15.
		if cell.Status != bench.CellOK || cell.Score == nil || *cell.Score != 70 || !strings.Contains(cell.Feedback, "`typecheck`") {
			t.Fatalf("cell %+v, want ok with score 70 and feedback naming `typecheck`", cell)
		}
		if cell.Evidence == nil || len(cell.Evidence.Observations) != 2 || cell.SnapshotID != "snap_cand" || cell.StateHash != "h-cand" ||
			cell.CaseHash != "case-hash" || cell.RunID != "bench_1" || cell.FailureReason != "" || cell.RecordedAt.IsZero() {
			t.Errorf("cell %+v", cell)
		}
		if o := output(t, run); o.Status != bench.CellOK || o.Score == nil || *o.Score != 70 {
			t.Errorf("step output %+v, want {ok 70}", o)
		}
		reqs := e.l.Fake.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want the executor's and the judge's", len(reqs))
		}
		for _, r := range reqs {
			if r.MaxTokens != 8000 || r.Kind != "bench_cell" || r.ResponseFormat != "json_object" {
				t.Errorf("request %+v: want bench_cell, max_tokens 8000 (bench.phase_max_tokens), JSON mode", r)
			}
		}
		calls, err := s.ListLLMCalls(context.Background(), store.LLMCallFilter{Kind: "bench_cell"})
		if err != nil || len(calls) != 2 {
			t.Fatalf("llm calls %+v, %v", calls, err)
		}
		for _, c := range calls {
			if c.Workspace != workspace || c.JobID != job.ID {
				t.Errorf("call %+v: want the run's workspace %s and job %d", c, workspace, job.ID)
			}
		}
		// The reference side sees no memory: 40.
		_, _ = e.final(t, e.run(t, bench.Reference))
		if ref := e.svc.get(t, bench.Reference); ref.Score == nil || *ref.Score != 40 {
			t.Errorf("reference cell %+v, want 40", ref)
		}
	})
}

// A malformed executor answer is retried; the last attempt records the
// cell failed with a null score (never 0) and the reason, and the step
// succeeds so the run's decision still runs.
func TestMalformedRetriedThenFailedNull(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, &fakeds.Script{Rules: []fakeds.Rule{{Kind: "bench_cell", Marker: "# Memory (captured snapshot)",
			Response: &fakeds.Response{Content: `{"completed":true,"summary":"s","actions":[],"observations":[],"score":100}`}}}}, nil)
		job, run := e.final(t, e.run(t, bench.Candidate))
		if job.State != rivertype.JobStateCompleted || job.Attempt != 3 || len(job.Errors) != 2 {
			t.Fatalf("job %s after %d attempts (errors %v), want completed on the 3rd after 2 errors", job.State, job.Attempt, job.Errors)
		}
		cell := e.svc.get(t, bench.Candidate)
		if cell.Status != bench.CellFailed || cell.Score != nil || cell.FailureReason != bench.MalformedExecutorJSON ||
			cell.Evidence != nil || cell.Detail == "" {
			t.Fatalf("cell %+v, want failed, score null, malformed-executor-json, no evidence, a detail", cell)
		}
		if e.svc.records != 1 {
			t.Errorf("%d records, want 1: failed attempts record nothing", e.svc.records)
		}
		if o := output(t, run); o.Status != bench.CellFailed || o.Score != nil {
			t.Errorf("step output %+v, want {failed null}", o)
		}
		if n := len(e.l.Fake.Requests()); n != 3 {
			t.Errorf("%d requests, want 3 executor calls and no judge call", n)
		}
	})
}

// A permanent LLM error (HTTP 400) records the cell failed at once:
// retrying cannot help.
func TestPermanentErrorFailsAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, &fakeds.Script{Rules: []fakeds.Rule{{Kind: "bench_cell", Marker: "# Rubric", Fault: fakeds.FaultBadRequest}}}, nil)
		job, run := e.final(t, e.run(t, bench.Candidate))
		if job.State != rivertype.JobStateCompleted || job.Attempt != 1 {
			t.Fatalf("job %s after %d attempts (%v), want completed after 1", job.State, job.Attempt, job.Errors)
		}
		cell := e.svc.get(t, bench.Candidate)
		if cell.Status != bench.CellFailed || cell.Score != nil || cell.FailureReason != bench.ProviderError ||
			!strings.Contains(cell.Detail, "400") || cell.Evidence == nil {
			t.Fatalf("cell %+v, want failed provider-error with the 400 and the executor's evidence kept", cell)
		}
		if o := output(t, run); o.Status != bench.CellFailed {
			t.Errorf("step output %+v", o)
		}
	})
}

// A cell whose budget key is spent snoozes until the reset without
// burning an attempt or recording anything; once there is room it runs
// on its first attempt.
func TestBudgetSnoozesWithoutAttempt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, map[string]config.Limit{"workspace:" + workspace: {Tokens: 20000}})
		// Another call of the run holds most of the key's day.
		held, err := e.l.Ledger.Reserve(context.Background(), budget.Request{Workspace: workspace, Tokens: 15000, Expires: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		runID := e.run(t, bench.Candidate)
		ev := enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
			return ev.Job.Kind == "bench_cell" && ev.Kind == river.EventKindJobSnoozed
		})
		if ev.Job.State != rivertype.JobStateScheduled || ev.Job.Attempt != 0 || time.Until(ev.Job.ScheduledAt) < time.Minute {
			t.Fatalf("snoozed job %s at attempt %d until %s: want scheduled, no attempt burnt, until the reset", ev.Job.State, ev.Job.Attempt, ev.Job.ScheduledAt)
		}
		if len(e.l.Fake.Requests()) != 0 || e.svc.records != 0 {
			t.Fatalf("a snoozed cell sent %d requests and made %d records", len(e.l.Fake.Requests()), e.svc.records)
		}
		run, err := e.runner.Get(context.Background(), runID)
		if err != nil || run.Status != store.WorkflowRunning || run.Steps[0].Status == store.WorkflowStepFailed {
			t.Fatalf("run %+v, %v: want it running", run, err)
		}
		// Room again; made due now rather than at the reset.
		if err := e.l.Ledger.Release(context.Background(), held); err != nil {
			t.Fatal(err)
		}
		if _, err := e.client.JobRetry(context.Background(), ev.Job.ID); err != nil {
			t.Fatal(err)
		}
		job, run := e.final(t, runID)
		if job.State != rivertype.JobStateCompleted || job.Attempt != 1 {
			t.Fatalf("job %s after %d attempts (%v), want completed on its first", job.State, job.Attempt, job.Errors)
		}
		if o := output(t, run); o.Status != bench.CellOK {
			t.Errorf("step output %+v", o)
		}
	})
}

// A judge whose score is out of range fails the cell, once its attempts
// are spent, as invalid-reviewer-score, with the executor's evidence kept.
func TestInvalidJudgeScoreKeepsEvidence(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, &fakeds.Script{Rules: []fakeds.Rule{{Kind: "bench_cell", Marker: "# Rubric",
			Response: &fakeds.Response{Content: `{"score":150,"feedback":"great"}`}}}}, nil)
		job, _ := e.final(t, e.run(t, bench.Candidate))
		if job.State != rivertype.JobStateCompleted || job.Attempt != 3 {
			t.Fatalf("job %s after %d attempts (%v)", job.State, job.Attempt, job.Errors)
		}
		cell := e.svc.get(t, bench.Candidate)
		if cell.Status != bench.CellFailed || cell.Score != nil || cell.FailureReason != bench.InvalidReviewerScore || cell.Evidence == nil {
			t.Fatalf("cell %+v, want failed invalid-reviewer-score with evidence", cell)
		}
	})
}

// 402 (DeepSeek's balance exhausted) pauses the llm queue and snoozes the
// cell without an attempt, as every LLM job does; resumed, it scores.
func TestBalanceExhaustedPauses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, &fakeds.Script{Rules: []fakeds.Rule{{Kind: "bench_cell", Fault: fakeds.FaultBalance, Times: 1}}}, nil)
		ctx := context.Background()
		runID := e.run(t, bench.Candidate)
		ev := enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
			return ev.Job.Kind == "bench_cell" && ev.Kind == river.EventKindJobSnoozed
		})
		if q, err := e.client.QueueGet(ctx, "llm"); err != nil || q.PausedAt == nil || ev.Job.Attempt != 0 || e.svc.records != 0 {
			t.Fatalf("after 402: queue %+v (%v), attempt %d, %d records; want paused, none burnt, nothing recorded", q, err, ev.Job.Attempt, e.svc.records)
		}
		if err := e.client.QueueResume(ctx, "llm", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := e.client.JobRetry(ctx, ev.Job.ID); err != nil {
			t.Fatal(err)
		}
		job, run := e.final(t, runID)
		if job.State != rivertype.JobStateCompleted || job.Attempt != 1 {
			t.Fatalf("job %s after %d attempts (%v)", job.State, job.Attempt, job.Errors)
		}
		if o := output(t, run); o.Status != bench.CellOK {
			t.Errorf("step output %+v", o)
		}
	})
}

// A cell whose job runs out of its time is retried like any failure; on
// its last attempt it is recorded failed, reason timeout, score null, and
// the step succeeds, so the run is still decided.
func TestJobTimeoutFailsTheCellOnTheLastAttempt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := startWith(t, s, &fakeds.Script{Rules: []fakeds.Rule{{Kind: "bench_cell", Fault: fakeds.FaultHang}}}, nil,
			config.JobOverride{MaxAttempts: 2, Timeout: config.Duration(300 * time.Millisecond)})
		job, run := e.final(t, e.run(t, bench.Candidate))
		if job.State != rivertype.JobStateCompleted || job.Attempt != 2 || len(job.Errors) != 1 {
			t.Fatalf("job %s after %d attempts (errors %v), want completed on the 2nd after 1 error", job.State, job.Attempt, job.Errors)
		}
		cell := e.svc.get(t, bench.Candidate)
		if cell.Status != bench.CellFailed || cell.Score != nil || cell.FailureReason != bench.Timeout {
			t.Fatalf("cell %+v, want failed, score null, reason timeout", cell)
		}
		if o := output(t, run); o.Status != bench.CellFailed || o.Score != nil {
			t.Errorf("step output %+v, want {failed null}", o)
		}
	})
}
