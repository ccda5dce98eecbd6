package tasks

import (
	"context"
	"database/sql"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/store"
)

// ReflectionScopes are the scopes a reflection on a task may write, the
// agent's and the reflect_task job's alike: its own session's (reflection)
// and its workspace's. Both read an untrusted session, so global (every
// workspace's prompt) and another session's are an operator's move (mull
// lessons move). Pass it to reflection.Parse and, through Material, to the
// material's schema.
var ReflectionScopes = []memory.LessonScope{memory.LessonReflection, memory.LessonWorkspace}

// Reflect is the agent's task_reflect: body is the reflection's JSON (the
// schema the reflect_task job's model answers in). The task must be closed
// in agent or both mode and not reflected on yet: unknown is ErrNotFound;
// open, or closed in job mode, a *ConflictError; reflected an
// *AlreadyReflectedError. The body goes through reflection.Parse
// (reflection.adversarial_review as configured; a *reflection.FieldError
// names the JSON path, and nothing is stored), a task_id in it must be this
// task, and then Apply, by agent. In both mode whichever of the job and
// the agent applies first stands.
func (s *Service) Reflect(ctx context.Context, taskID string, body []byte) (Applied, error) {
	t, err := s.Get(ctx, taskID)
	if err != nil {
		return Applied{}, err
	}
	switch {
	case t.Status == store.TaskOpen:
		return Applied{}, &ConflictError{TaskID: t.ID, Reason: "is still open: end it (task_end) before reflecting on it"}
	case t.ReflectMode == config.ReflectJob:
		return Applied{}, &ConflictError{TaskID: t.ID, Reason: "reflection.mode is job: mull reflects on this task itself"}
	case !t.ReflectedAt.IsZero():
		return Applied{}, &AlreadyReflectedError{ID: t.ID, By: t.ReflectedBy, At: t.ReflectedAt}
	}
	refl, err := reflection.Parse(body, reflection.Options{Adversarial: s.cfg.AdversarialReview, Scopes: ReflectionScopes})
	if err != nil {
		return Applied{}, err
	}
	var out Applied
	err = s.store.InTx(ctx, func(tx *sql.Tx) (err error) {
		out, err = s.Apply(ctx, tx, t.ID, refl, ByAgent, 0)
		return err
	})
	if err != nil {
		return Applied{}, err
	}
	return out, nil
}
