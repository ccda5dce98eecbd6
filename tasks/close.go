package tasks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/jobs/reflecttask"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// Closed is a closed task and what happens to its reflection.
type Closed struct {
	Task store.Task
	// Mode is reflection.mode at close: job, agent or both.
	Mode string
	// JobID is the reflect_task job enqueued (job, both); 0 none.
	JobID int64
	// Material is what the agent reflects on (agent, both); "" none.
	Material string
}

// Close ends an open task with status (succeeded, failed, abandoned or
// aborted) and result, in one transaction: a task_close event (through
// ingest), the task's close record with its window's end (close_seq) and
// environment_ids, and, per reflection.mode, the reflect_task job enqueued
// in the same transaction (job, both; unique per task) and the reflection
// material for the agent (agent, both). If enqueueing fails, nothing of the
// close is stored. An unknown task is ErrNotFound, a closed one a
// *ClosedError, a bad status a *FieldError.
func (s *Service) Close(ctx context.Context, id, status, result string) (Closed, error) {
	if !slices.Contains(events.TaskStatuses, status) {
		return Closed{}, &FieldError{Field: "status", Problem: fmt.Sprintf("%q is not one of succeeded, failed, abandoned, aborted", status)}
	}
	result = strings.TrimSpace(result)
	mode := s.cfg.ModeOrDefault()
	var out Closed
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		t, err := s.store.GetTask(ctx, tx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("no task %q: %w", id, ErrNotFound)
		case err != nil:
			return err
		case t.Status != store.TaskOpen:
			return &ClosedError{ID: t.ID, Status: t.Status, ClosedAt: t.ClosedAt}
		}
		payload, _ := json.Marshal(events.TaskClosePayload{TaskID: t.ID, Status: status, Result: result})
		if err := s.storeEvent(ctx, tx, events.Event{ID: "mull:" + t.ID + ":close", Type: events.TaskClose,
			SessionID: t.SessionID, Workspace: t.Workspace, Time: s.store.Now(), Payload: payload}); err != nil {
			return err
		}
		seq, err := s.store.LastEventSeq(ctx, tx, t.SessionID)
		if err != nil {
			return err
		}
		if out.Task, err = s.store.CloseTask(ctx, tx, t.ID, store.TaskClose{Status: status, Result: result, At: s.store.Now(),
			CloseSeq: seq, ReflectMode: mode}); err != nil {
			return err
		}
		out.Mode = mode
		if mode != config.ReflectAgent {
			if s.client == nil {
				return errors.New("reflection.mode " + mode + " enqueues reflect_task, and this service has no River client (UseClient)")
			}
			res, err := s.client.InsertTx(ctx, tx, reflecttask.Args{TaskID: t.ID},
				&river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}})
			if err != nil {
				return fmt.Errorf("close task %s: enqueue reflect_task: %w", t.ID, err)
			}
			out.JobID = res.Job.ID
			if err := s.store.SetTaskReflectJob(ctx, tx, t.ID, out.JobID); err != nil {
				return err
			}
			out.Task.ReflectJobID = out.JobID
		}
		if mode != config.ReflectJob {
			out.Material, err = s.Material(ctx, tx, out.Task, reflection.ModeAgent)
		}
		return err
	})
	if err != nil {
		return Closed{}, err
	}
	return out, nil
}

// Material is the reflection material of closed task t for mode (the
// reflect_task job asks with reflection.ModeJob, Close with ModeAgent): the
// task, its DECISION ENVIRONMENT (lesson.RenderEnvironment of its frozen
// snapshot) when reflection.environment_in_brief is on, and the decision
// trajectory of its window's stored events, with reflection.silent and
// reflection.adversarial_review as configured, and the schema offers
// ReflectionScopes.
func (s *Service) Material(ctx context.Context, q memories.Querier, t store.Task, mode reflection.Mode) (string, error) {
	env := ""
	if s.cfg.EnvironmentInBriefOn() {
		snap, err := Environment(t)
		if err != nil {
			return "", fmt.Errorf("task %s: environment: %w", t.ID, err)
		}
		env = lesson.RenderEnvironment(snap)
	}
	evs, err := s.store.EventsBySeq(ctx, q, t.SessionID, t.OpenSeq, t.CloseSeq, maxWindowEvents)
	if err != nil {
		return "", err
	}
	window := make([]reflection.Event, 0, len(evs))
	for _, e := range evs {
		window = append(window, reflection.EventOf(e.Seq, events.Event{ID: e.ID, Type: events.Type(e.Type),
			SessionID: e.SessionID, Workspace: e.Workspace, Time: e.Time, Payload: e.Payload}))
	}
	brief := reflection.TaskBrief{ID: t.ID, Goal: t.Goal, Expected: t.Expected, Status: t.Status, Result: t.Result}
	return reflection.Material(brief, env, reflection.BuildTrajectory(window, reflection.TrajectoryOptions{}),
		reflection.MaterialOptions{Mode: mode, Silent: s.cfg.SilentOn(), Adversarial: s.cfg.AdversarialReview,
			Scopes: ReflectionScopes}), nil
}

// maxWindowEvents bounds the events a material reads of a task's window
// (the store's own cap); the trajectory keeps far fewer.
const maxWindowEvents = 10000
