package jobs

import (
	"context"
	"database/sql"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/reflecttask"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/tasks"
)

// registerReflectTask registers reflect_task, its worker and its turn-end
// hook built from the reflection.* keys. The worker applies through tasks.Service.Apply,
// the agent's task_reflect's path too; tasks enqueues reflect_task, so the
// kind's package cannot import it, and the adapter is here.
func registerReflectTask(reg *engine.Registry, d Deps, in *ingest.Service) {
	cfg := d.Config
	mem := d.memories()
	svc := tasks.New(d.Store, mem, in, cfg.Reflection)
	w := &reflecttask.Worker{Store: d.Store, LLM: d.LLM, Logger: d.Logger.With("component", "reflect_task"), Lessons: mem,
		Apply: applyByJob(svc), Options: reflecttask.Options{EnvironmentInBrief: cfg.Reflection.EnvironmentInBriefOn(),
			Adversarial: cfg.Reflection.AdversarialReview}}
	if d.Workspaces != nil {
		w.Off = func(ws string) bool { return !d.Workspaces.Effective(ws).ReflectionOn() }
	}
	h := &reflecttask.TurnHook{Store: d.Store, Logger: d.Logger.With("component", "turn_end"), Fallback: cfg.Reflection.TurnFallback, NoNudge: !cfg.Reflection.NudgeOn(),
		Nudge: reflection.NudgeOptions{MinCalls: cfg.Reflection.NudgeMinCalls, MaxPerSession: cfg.Reflection.NudgeMaxPerSession}}
	reflecttask.Register(reg, w, h)
}

func applyByJob(svc *tasks.Service) reflecttask.Applier {
	return func(ctx context.Context, tx *sql.Tx, taskID string, r reflection.Reflection, jobID int64) (reflecttask.Applied, error) {
		a, err := svc.Apply(ctx, tx, taskID, r, tasks.ByJob, jobID)
		out := reflecttask.Applied{Recorded: a.LessonsRecorded}
		for _, res := range a.Results {
			if res.Refused != "" {
				out.Refused++
			}
		}
		return out, err
	}
}
