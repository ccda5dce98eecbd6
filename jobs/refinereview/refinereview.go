package refinereview

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
)

// Worker works refine_review jobs.
type Worker struct {
	river.WorkerDefaults[Args]
	Store   *store.Store
	LLM     *llm.Client
	Harness *harnesses.Service
	// Config is harness.*: the trajectory's budget, planner_max_tokens.
	Config config.Harness
	Logger *slog.Logger
}

// Work runs one attempt: the gate records its start (the cooldown's
// anchor), the material is read once (the baseline before any call), the
// review call and, when it approves, the planner call are made, and the
// verdict, the refinement and the gate's end commit with the job's
// completion. A failed attempt records a failed review row and the gate's
// end, touches no entry, and goes back to River (retry, dead letter).
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	a := job.Args
	if err := a.Validate(); err != nil {
		return river.JobCancel(err)
	}
	if a.Session != "" {
		sess, err := w.Store.GetSession(ctx, a.Session)
		if errors.Is(err, store.ErrNotFound) {
			return river.JobCancel(fmt.Errorf("refine_review: session %s not found", a.Session))
		}
		if err != nil {
			return err
		}
		a.Workspace = cmp.Or(a.Workspace, sess.Workspace)
	}
	r := &run{w: w, job: job, args: a}
	if err := r.start(ctx); err != nil {
		return err
	}
	m, err := w.load(ctx, a)
	if err != nil {
		return r.fail(ctx, err)
	}
	r.route = m.Route
	var review *harness.Review // nil for a manual refine: no review call
	if a.automatic() {
		out, _, err := llm.CompleteJSON[*reviewAnswer](ctx, w.LLM, r.call(harness.ReviewPrompt(m.in)))
		if err != nil {
			return r.fail(ctx, err)
		}
		if review = &out.r; !review.Approved {
			return r.finish(ctx, harnesses.ReviewRow{Outcome: harness.Declined, Rationale: review.Rationale}, nil)
		}
	}
	p := harness.PlanPrompt(m.in, a.Scope(), review, a.Instruction)
	plan, _, err := llm.CompleteJSON[*planAnswer](ctx, w.LLM, r.call(p))
	if err != nil {
		return r.fail(ctx, err)
	}
	return r.apply(ctx, m, review, plan.p)
}

// The job's failpoints (store.SetFailpoint, and SetFailpointError for
// FailpointApplied; tests only, e.g. MULL_TEST_FAILPOINT in cmd/mull's
// kill tests): FailpointPlanned is reached once the planner answered,
// before the completing transaction begins (a kill -9 there loses only
// the plan: the retry plans again); FailpointApplied inside it, after the
// apply and before the commit (a kill or an error there rolls the apply
// back with the job's completion).
const (
	FailpointPlanned = "refine_review.planned"
	FailpointApplied = "refine_review.applied"
)

// run is one attempt of a job.
type run struct {
	w     *Worker
	job   *river.Job[Args]
	args  Args
	route harness.Route
}

func (r *run) logger() *slog.Logger {
	l := r.w.Logger
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return l.With("job_id", r.job.ID, "session_id", r.args.Session, "scope", r.args.Scope().Key(), "trigger", r.args.Trigger)
}

// gated reports whether the attempt keeps the session's review gate: the
// automatic reviews do; a manual refine leaves it alone.
func (r *run) gated() bool { return r.args.automatic() && r.args.Session != "" }

// start records the attempt's start on the gate, in its own transaction:
// the cooldown runs from here whatever the attempt's outcome.
func (r *run) start(ctx context.Context) error {
	if !r.gated() {
		return nil
	}
	return r.w.Store.InTx(ctx, func(tx *sql.Tx) error {
		g, err := r.w.Store.HarnessGate(ctx, tx, r.args.Session)
		if err != nil {
			return err
		}
		return r.w.Store.PutHarnessGate(ctx, tx, r.args.Session, r.workspace(), harness.Started(g, r.w.Store.Now()))
	})
}

func (r *run) workspace() string { return r.args.Workspace }

// call is one LLM call of the job: the prompt's fixed system text and the
// job's material first, byte-identical for both calls, so the planner
// call reads them from DeepSeek's prefix cache; the call's own ask last.
func (r *run) call(p harness.Prompt) llm.Call {
	return llm.Call{Kind: r.job.Kind, JobID: r.job.ID, Workspace: r.workspace(), MaxTokens: r.w.Config.PlannerMaxTokens,
		Messages: []llm.Message{llm.System(p.System), llm.User(p.Material), llm.User(p.Ask)}}
}

// apply applies the plan in the transaction that records the verdict,
// ends the gate and completes the job.
func (r *run) apply(ctx context.Context, m material, review *harness.Review, plan harness.Proposal) error {
	row := harnesses.ReviewRow{Rationale: r.rationale(review, plan)}
	if len(plan.Edits) == 0 {
		row.Outcome = harness.Assessed
		return r.finish(ctx, row, nil)
	}
	req := harnesses.ApplyRequest{ID: RefinementID(r.job.ID), Proposal: plan, Scope: r.args.Scope(), Baseline: m.Baseline,
		Automatic: r.args.protectedImmutable(), Source: r.args.source(), JobID: r.job.ID, SessionID: r.args.Session}
	store.Failpoint(FailpointPlanned)
	err := r.finish(ctx, row, func(ctx context.Context, tx *sql.Tx, row *harnesses.ReviewRow) error {
		got, err := r.w.Harness.ApplyTx(ctx, tx, req)
		if err != nil {
			return err
		}
		store.Failpoint(FailpointApplied)
		if err := store.FailpointError(FailpointApplied); err != nil {
			return err
		}
		applied, _ := got.Refinement.Counts()
		row.Outcome, row.RefinementID = harness.GateOutcome(true, len(plan.Edits), applied), got.Refinement.ID
		if got.Pending != "" { // harness.require_global_approval holds it as a proposal
			row.Outcome, row.RefinementID = harness.Approved, got.Pending
		}
		row.Rejected = rejected(got.Refinement)
		return nil
	})
	if errors.Is(err, harnesses.ErrConflict) && r.applied(ctx, req.ID) {
		// This job's refinement committed in an earlier run whose completion
		// was lost: it applied once; complete the job.
		r.logger().Info("refinement already applied; completing", "refinement_id", req.ID)
		return r.finish(ctx, harnesses.ReviewRow{}, nil)
	}
	if err != nil {
		return r.fail(ctx, fmt.Errorf("apply refinement %s: %w", req.ID, err))
	}
	return nil
}

func (r *run) applied(ctx context.Context, id string) bool {
	_, err := r.w.Harness.Refinement(ctx, id)
	return err == nil
}

// rationale is the review's, or for a manual refine the plan's summary.
func (r *run) rationale(review *harness.Review, plan harness.Proposal) string {
	if review != nil {
		return review.Rationale
	}
	return plan.Summary
}

func rejected(ref harness.Refinement) []harness.Rejected {
	var out []harness.Rejected
	for _, e := range ref.Edits {
		if !e.Applied {
			out = append(out, harness.Rejected{Kind: e.Kind, ID: e.ID, Action: e.Action, Error: e.Error})
		}
	}
	return out
}

// finish commits the attempt's end: in one transaction, what before does
// (the apply, which fills the row in), the review row (none when its
// Outcome is empty), the gate's end and the job's completion.
func (r *run) finish(ctx context.Context, row harnesses.ReviewRow,
	before func(context.Context, *sql.Tx, *harnesses.ReviewRow) error) error {
	err := r.w.Store.InTx(ctx, func(tx *sql.Tx) error {
		if before != nil {
			if err := before(ctx, tx, &row); err != nil {
				return err
			}
		}
		if err := r.end(ctx, tx, row); err != nil {
			return err
		}
		_, err := river.JobCompleteTx[riverdriver.Driver[*sql.Tx]](ctx, tx, r.job)
		return err
	})
	if err == nil && row.Outcome != "" {
		r.logger().Info("harness review", "outcome", row.Outcome, "refinement_id", row.RefinementID,
			"rejected", len(row.Rejected), "route", r.route)
	}
	return err
}

// end records the review row and the gate's end inside tx.
func (r *run) end(ctx context.Context, tx *sql.Tx, row harnesses.ReviewRow) error {
	if row.Outcome != "" {
		row.At, row.Session, row.Workspace, row.Scope = r.w.Store.Now(), r.args.Session, r.workspace(), r.args.Scope()
		row.Trigger, row.Turns, row.JobID, row.Route = r.args.Trigger, r.args.Turns, r.job.ID, r.route
		if _, err := r.w.Harness.RecordReview(ctx, tx, row); err != nil {
			return err
		}
	}
	if !r.gated() {
		return nil
	}
	g, err := r.w.Store.HarnessGate(ctx, tx, r.args.Session)
	if err != nil {
		return err
	}
	return r.w.Store.PutHarnessGate(ctx, tx, r.args.Session, r.workspace(), harness.Finished(g))
}

// fail records a failed attempt (a failed review row with the error, the
// gate's end) without touching the harness, and hands the error to River
// through llm.JobResult: retried while attempts remain, then the dead
// letters. A call that never reached the model (the budget is spent, no
// API key) is no failed attempt: the job waits and the gate stays.
func (r *run) fail(ctx context.Context, cause error) error {
	var e *llm.Error
	if errors.As(cause, &e) && (e.Class == llm.Budget || e.Class == llm.Pause) {
		return llm.JobResult(ctx, r.logger(), r.job.JobRow, cause)
	}
	row := harnesses.ReviewRow{Outcome: harness.Failed, Rationale: cut(cause.Error(), maxRationale)}
	// Recorded even when the job's own deadline was what failed it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := r.w.Store.InTx(rctx, func(tx *sql.Tx) error { return r.end(rctx, tx, row) })
	if err != nil {
		r.logger().Warn("record failed harness review", "error", err, "cause", cause)
	}
	r.logger().Warn("harness review failed", "error", cause, "attempt", r.job.Attempt, "max_attempts", r.job.MaxAttempts)
	return llm.JobResult(ctx, r.logger(), r.job.JobRow, cause)
}

// maxRationale bounds a failed row's rationale (the error's text).
const maxRationale = 1000

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
