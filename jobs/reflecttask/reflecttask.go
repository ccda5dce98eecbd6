package reflecttask

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
)

// Spec: the llm queue; the seed's 5 attempts 30 minutes apart, like the
// retros (an answer that fails the schema is the model's fault and is
// retried so too, then the dead letters with the field it got wrong);
// a timeout twice one call's worst case (llm.call_timeout, 5m by default),
// the retros' too, so the longest job timeout (and with it when a stuck
// job is rescued) stays what it was. Config [jobs.reflect_task] overrides.
var Spec = engine.Spec{Queue: "llm", LLM: true, MaxAttempts: 5, Backoff: 30 * time.Minute, Timeout: 10 * time.Minute}

// Applier applies a validated reflection to the store inside tx, by the
// job: the one path the job and the agent's task_reflect share
// (tasks.Service.Apply, which jobs.Register adapts). A task reflected on
// before is refused with a *store.TaskReflectedError and changes nothing;
// a lesson that is no valid lesson refuses the whole reflection with a
// *reflection.FieldError before anything is written.
type Applier func(ctx context.Context, tx *sql.Tx, taskID string, r reflection.Reflection, jobID int64) (Applied, error)

// Applied is what an apply did, for the log.
type Applied struct {
	// Recorded counts the lessons written; Refused those a check refused.
	Recorded int
	Refused  int
}

// Worker works reflect_task jobs.
type Worker struct {
	river.WorkerDefaults[Args]
	Store  *store.Store
	LLM    *llm.Client
	Logger *slog.Logger
	Apply  Applier
	// Lessons reads the lessons in force for a turn's reflection, which
	// freezes no environment of its own (memories.Service).
	Lessons InForce
	// Options are the reflection.* keys the job reads.
	Options Options
	// Off, when set, reports a workspace whose reflection switch is off
	// (wsconfig, asked at the job's start): its tasks are not reflected on.
	Off func(workspace string) bool
}

// Options are the reflection.* config keys the job reads.
type Options struct {
	// EnvironmentInBrief is reflection.environment_in_brief: the material
	// shows the decision environment.
	EnvironmentInBrief bool
	// Adversarial is reflection.adversarial_review: every new or revised
	// lesson must carry a critique.
	Adversarial bool
}

// Work reflects on the task and applies the reflection with the job's
// completion. A task reflected on already (this job, killed after its
// commit; or the agent, in mode both) completes the job at once.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	task, err := w.Store.GetTask(ctx, w.Store.DB, job.Args.TaskID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return river.JobCancel(err)
	case err != nil:
		return err
	case task.Status == store.TaskOpen:
		return river.JobCancel(fmt.Errorf("task %s is still open: a task is reflected on once closed", task.ID))
	case !task.ReflectedAt.IsZero():
		w.Logger.Info("task already reflected on; completing", "job_id", job.ID, "task_id", task.ID, "reflected_by", task.ReflectedBy)
		return nil
	case w.Off != nil && w.Off(task.Workspace):
		// Completed, not cancelled: not a failure, and not a dead letter.
		w.Logger.Info("reflection off for this workspace (its reflection setting); completing without a reflection", "job_id", job.ID,
			"task_id", task.ID, "workspace", task.Workspace)
		return nil
	}
	prompt, err := w.prompt(ctx, task)
	if err != nil {
		return err
	}
	refl, err := w.ask(ctx, llm.Call{Kind: job.Kind, JobID: job.ID, Workspace: task.Workspace,
		Messages: []llm.Message{llm.System(prompt.System), llm.User(prompt.User)}})
	if err != nil {
		return llm.JobResult(ctx, w.Logger, job.JobRow, err)
	}
	return w.apply(ctx, job, task, refl)
}

// apply applies the reflection and completes the job in one transaction.
func (w *Worker) apply(ctx context.Context, job *river.Job[Args], task store.Task, refl reflection.Reflection) error {
	var got Applied
	err := w.Store.InTx(ctx, func(tx *sql.Tx) error {
		var err error
		if got, err = w.Apply(ctx, tx, task.ID, refl, job.ID); err != nil {
			return err
		}
		_, err = river.JobCompleteTx[riverdriver.Driver[*sql.Tx]](ctx, tx, job)
		return err
	})
	var fe *reflection.FieldError
	if errors.As(err, &fe) {
		// The model wrote a lesson that is no valid lesson: its fault, like
		// an answer that breaks the schema.
		return llm.JobResult(ctx, w.Logger, job.JobRow, &llm.Error{Class: llm.Invalid, Reason: "schema",
			Err: fmt.Errorf("output fails validation: reflection: %w", err)})
	}
	if alreadyReflected(err) {
		// Reflected on between the check and this transaction (the agent in
		// mode both, or this job's earlier run): nothing here applied.
		w.Logger.Info("task reflected on meanwhile; completing", "job_id", job.ID, "task_id", task.ID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("apply reflection of task %s: %w", task.ID, err)
	}
	w.Logger.Info("task reflected on", "job_id", job.ID, "task_id", task.ID, "task_kind", task.Kind, "session_id", task.SessionID,
		"status", task.Status, "lessons", len(refl.Lessons), "recorded", got.Recorded, "refused", got.Refused)
	return nil
}

func alreadyReflected(err error) bool {
	var e *store.TaskReflectedError
	return errors.As(err, &e)
}

// ask makes the JSON-mode call and parses the answer with
// reflection.Parse: an answer that breaks the schema is llm Invalid (the
// model's fault: retried while attempts remain, then the dead letters,
// with the field it got wrong).
func (w *Worker) ask(ctx context.Context, call llm.Call) (reflection.Reflection, error) {
	if w.Options.Adversarial {
		out, _, err := llm.CompleteJSON[*reviewed](ctx, w.LLM, call)
		if err != nil {
			return reflection.Reflection{}, err
		}
		return out.r, nil
	}
	out, _, err := llm.CompleteJSON[*plain](ctx, w.LLM, call)
	if err != nil {
		return reflection.Reflection{}, err
	}
	return out.r, nil
}

// answer is the model's JSON, kept whole for reflection.Parse (which is
// stricter than encoding/json: unknown fields, types and the rules of a
// reflection, each refusal naming its JSON path).
type answer struct {
	raw []byte
	r   reflection.Reflection
}

func (a *answer) UnmarshalJSON(b []byte) error {
	a.raw = append(a.raw[:0], b...)
	return nil
}

func (a *answer) parse(opts reflection.Options) error {
	r, err := reflection.Parse(a.raw, opts)
	if err != nil {
		return fmt.Errorf("reflection: %w", err)
	}
	a.r = r
	return nil
}

// plain and reviewed parse without and with the adversarial review.
type (
	plain    struct{ answer }
	reviewed struct{ answer }
)

func (a *plain) Validate() error {
	return a.parse(reflection.Options{Scopes: reflection.WritableScopes})
}
func (a *reviewed) Validate() error {
	return a.parse(reflection.Options{Adversarial: true, Scopes: reflection.WritableScopes})
}

// Register adds the worker and the turn-end hook.
func Register(reg *engine.Registry, w *Worker, h *TurnHook) {
	engine.Add(reg, Spec, w)
	reg.OnTurnEnded(h.TurnEnded)
}
