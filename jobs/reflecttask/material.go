package reflecttask

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// InForce reads the lessons in force for a session (memories.Service).
type InForce interface {
	LessonsInForce(ctx context.Context, q memories.Querier, workspace, session string) ([]memory.Memory, time.Time, error)
}

// maxWindow bounds the events of a task's window read: the trajectory
// keeps the first entry and the newest, and the material is capped.
const maxWindow = 10000

// prompt builds the task's material as the job's two messages: the task
// (or turn), its decision environment when reflection.environment_in_brief,
// and the trajectory of its window's stored events.
func (w *Worker) prompt(ctx context.Context, task store.Task) (reflection.Prompt, error) {
	rows, err := w.Store.EventsBySeq(ctx, w.Store.DB, task.SessionID, task.OpenSeq, task.CloseSeq, maxWindow)
	if err != nil {
		return reflection.Prompt{}, err
	}
	traj := reflection.BuildTrajectory(trajectoryEvents(rows), reflection.TrajectoryOptions{})
	env, err := w.environment(ctx, task)
	if err != nil {
		return reflection.Prompt{}, err
	}
	opts := reflection.MaterialOptions{Mode: reflection.ModeJob, Adversarial: w.Options.Adversarial, Scopes: reflection.WritableScopes}
	if task.Kind != store.TaskKindTurn {
		brief := reflection.TaskBrief{ID: task.ID, Goal: task.Goal, Expected: task.Expected, Status: task.Status, Result: task.Result}
		return reflection.JobPrompt(brief, env, traj, opts), nil
	}
	turn, err := w.turnBrief(ctx, task)
	if err != nil {
		return reflection.Prompt{}, err
	}
	p, ok := reflection.TurnJobPrompt(turn, env, traj, opts)
	if !ok { // the hook enqueues only due turns; an empty one has nothing to ask
		return p, fmt.Errorf("turn task %s has nothing to reflect on (an empty window)", task.ID)
	}
	return p, nil
}

// environment renders the decision environment the task froze at open.
// A turn froze none (it is not a task, so it counts in no precedent):
// its material shows the lessons in force now, just after the turn.
func (w *Worker) environment(ctx context.Context, task store.Task) (string, error) {
	if !w.Options.EnvironmentInBrief {
		return "", nil
	}
	if task.Kind == store.TaskKindTurn {
		ms, at, err := w.Lessons.LessonsInForce(ctx, w.Store.DB, task.Workspace, task.SessionID)
		if err != nil {
			return "", err
		}
		return lesson.RenderEnvironment(lesson.BuildSnapshot(ms, w.Store.Now(), at)), nil
	}
	var snap lesson.Snapshot
	if err := json.Unmarshal([]byte(task.Environment), &snap); err != nil {
		return "", fmt.Errorf("task %s: environment is not a snapshot: %w", task.ID, err)
	}
	return lesson.RenderEnvironment(snap), nil
}

// turnBrief describes a turn task: its number (from its id, TurnID) and
// the task of its session open across it, if any.
func (w *Worker) turnBrief(ctx context.Context, task store.Task) (reflection.TurnBrief, error) {
	n, err := strconv.Atoi(task.ID[strings.LastIndexByte(task.ID, '-')+1:])
	if err != nil || reflection.TurnID(task.SessionID, n) != task.ID {
		return reflection.TurnBrief{}, fmt.Errorf("turn task %s: the id is not turn-<session>-<turn>", task.ID)
	}
	brief := reflection.TurnBrief{ID: task.ID, SessionID: task.SessionID, Turn: n}
	brief.OpenTaskID, err = openAcross(ctx, w.Store, w.Store.DB, task.SessionID, task.CloseSeq)
	return brief, err
}

// openAcross is the id of a task of the session open at seq (opened
// before it and not closed by then), or "".
func openAcross(ctx context.Context, st *store.Store, q memories.Querier, session string, seq int64) (string, error) {
	ts, err := st.ListTasks(ctx, q, store.TaskFilter{SessionID: session, Limit: 1000})
	if err != nil {
		return "", err
	}
	for _, t := range ts {
		if t.Kind == store.TaskKindTask && t.OpenSeq < seq && (t.Status == store.TaskOpen || t.CloseSeq >= seq) {
			return t.ID, nil
		}
	}
	return "", nil
}

// trajectoryEvents reads stored events as the trajectory does.
func trajectoryEvents(rows []store.Event) []reflection.Event {
	out := make([]reflection.Event, len(rows))
	for i, r := range rows {
		out[i] = reflection.EventOf(r.Seq, events.Event{ID: r.ID, Type: events.Type(r.Type), SessionID: r.SessionID,
			Workspace: r.Workspace, Time: r.Time, Payload: r.Payload})
	}
	return out
}
