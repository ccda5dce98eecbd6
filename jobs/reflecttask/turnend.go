package reflecttask

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/store"
)

// TurnHook is the ingest turn-end hook (engine.TurnHook): at the end of a
// primary session's turn, inside the ingest transaction, it reads the
// turn's stored events and serves the missed-task nudge
// (reflection.Nudge) as a notice to the session, and with
// reflection.turn_fallback on, makes a substantive turn no closed task
// covers a task of kind turn with a reflect_task job of its own.
type TurnHook struct {
	Store  *store.Store
	Logger *slog.Logger
	// Nudge are reflection.nudge_min_calls and nudge_max_per_session.
	Nudge reflection.NudgeOptions
	// Fallback is reflection.turn_fallback.
	Fallback bool
	// NoNudge is reflection.nudge off: no missed-task notice is served.
	NoNudge bool
}

// turn is one ended turn as the hook reads it.
type turn struct {
	sess     store.Session
	end      events.Event
	payload  events.TurnEndPayload
	from, to int64 // its window, (from, to] of the session's seq
	rows     []store.Event
	activity reflection.TurnActivity
	// closed: a task closed in this turn, whose reflection covers it.
	closed bool
}

// TurnEnded is the hook.
func (h *TurnHook) TurnEnded(ctx context.Context, tx *sql.Tx, client *engine.Client, sess store.Session, e events.Event) error {
	if !sess.Primary {
		return nil
	}
	t, err := h.read(ctx, tx, sess, e)
	if err != nil {
		return err
	}
	if err := h.nudge(ctx, tx, t); err != nil {
		return err
	}
	if h.Fallback {
		return h.fallback(ctx, tx, client, t)
	}
	return nil
}

// read loads the turn's window and what it did.
func (h *TurnHook) read(ctx context.Context, tx *sql.Tx, sess store.Session, e events.Event) (turn, error) {
	t := turn{sess: sess, end: e}
	_ = json.Unmarshal(e.Payload, &t.payload) // validated at ingest
	var err error
	if t.from, t.to, err = h.Store.TurnWindow(ctx, tx, sess.ID, e.ID); err != nil {
		return t, err
	}
	if t.rows, err = h.Store.EventsBySeq(ctx, tx, sess.ID, t.from, t.to, maxWindow); err != nil {
		return t, err
	}
	t.activity, t.closed = activity(t.rows)
	open, err := h.Store.ListTasks(ctx, tx, store.TaskFilter{SessionID: sess.ID, Status: store.TaskOpen, Limit: 1})
	if err != nil {
		return t, err
	}
	t.activity.TaskOpen = len(open) > 0
	t.activity.NudgesServed = sess.Nudges
	return t, nil
}

// nudge serves the missed-task notice when reflection.Nudge says so and
// the session's capped count takes one more.
func (h *TurnHook) nudge(ctx context.Context, tx *sql.Tx, t turn) error {
	if h.NoNudge {
		return nil
	}
	text, ok := reflection.Nudge(t.activity, h.Nudge)
	if !ok {
		return nil
	}
	// The capped count first, so the cap holds however turns race; a
	// second turn_end for a turn number that already has its nudge then
	// gives the count back (one transaction: nothing is spent on it).
	if counted, err := h.Store.IncrementNudges(ctx, tx, t.sess.ID, h.Nudge.WithDefaults().MaxPerSession); err != nil || !counted {
		return err
	}
	_, stored, err := h.Store.InsertSessionNotice(ctx, tx, store.SessionNotice{SessionID: t.sess.ID, Kind: store.NoticeNudge,
		Text: text, Turn: t.payload.Turn, RecordedAt: h.Store.Now()})
	if err != nil {
		return err
	}
	if !stored { // a second turn_end event for one turn number: its nudge stands
		h.Logger.Warn("turn has a nudge already", "session_id", t.sess.ID, "turn", t.payload.Turn, "event_id", t.end.ID)
		return h.Store.DecrementNudges(ctx, tx, t.sess.ID)
	}
	h.Logger.Info("missed-task nudge", "session_id", t.sess.ID, "turn", t.payload.Turn,
		"work_calls", t.activity.WorkCalls(), "files_changed", t.activity.FilesChanged, "nudges", t.sess.Nudges+1)
	return nil
}

// fallback makes a substantive turn that no closed task covers a task of
// kind turn, closed at once, and enqueues its reflect_task. A turn task
// freezes no environment (empty snapshot): a turn is no task, so it counts
// in no lesson's precedent; its material shows the lessons in force when
// the job runs.
func (h *TurnHook) fallback(ctx context.Context, tx *sql.Tx, client *engine.Client, t turn) error {
	if !t.activity.Substantive(h.Nudge) {
		return nil
	}
	brief := reflection.TurnBrief{ID: reflection.TurnID(t.sess.ID, t.payload.Turn), SessionID: t.sess.ID, Turn: t.payload.Turn, Covered: t.closed}
	if !reflection.TurnDue(brief, reflection.BuildTrajectory(trajectoryEvents(t.rows), reflection.TrajectoryOptions{})) {
		return nil
	}
	env, _ := json.Marshal(lesson.Snapshot{TakenAt: t.end.Time, Lessons: []lesson.Entry{}, Omitted: []lesson.Omitted{}}) // plain struct
	task := store.Task{ID: brief.ID, Kind: store.TaskKindTurn, SessionID: t.sess.ID, Workspace: t.sess.Workspace,
		Goal: fmt.Sprintf("turn %d (per-turn fallback reflection)", t.payload.Turn), OpenedAt: openedAt(t), OpenSeq: t.from,
		Environment: string(env)}
	if err := h.Store.InsertTask(ctx, tx, task); errors.Is(err, store.ErrTaskExists) {
		return nil // this turn's number came before: DSH numbers a session's turns once
	} else if err != nil {
		return err
	}
	if _, err := h.Store.CloseTask(ctx, tx, task.ID, store.TaskClose{Status: turnStatus(t.payload.Reason),
		Result: turnResult(t.payload), At: t.end.Time, CloseSeq: t.to, ReflectMode: "job"}); err != nil {
		return err
	}
	res, err := client.InsertTx(ctx, tx, Args{TaskID: task.ID}, nil)
	if err != nil {
		return err
	}
	h.Logger.Info("per-turn fallback reflection enqueued", "session_id", t.sess.ID, "turn", t.payload.Turn, "task_id", task.ID, "job_id", res.Job.ID)
	return h.Store.SetTaskReflectJob(ctx, tx, task.ID, res.Job.ID)
}

// activity reads what a turn's events did (reflection.TurnActivity), and
// whether a task closed in it.
func activity(rows []store.Event) (a reflection.TurnActivity, closed bool) {
	files := map[string]bool{}
	for _, r := range rows {
		switch events.Type(r.Type) {
		case events.TaskOpen:
			a.TaskBoundary = true
		case events.TaskClose:
			a.TaskBoundary, closed = true, true
		case events.ToolResult:
			var p events.ToolResultPayload
			if json.Unmarshal(r.Payload, &p) != nil {
				continue
			}
			a.ToolCalls = append(a.ToolCalls, p.Tool)
			closed = closed || p.Tool == "task_end"
			if changed, key := fileChange(p, r.ID); changed {
				files[key] = true
			}
		}
	}
	a.FilesChanged = len(files)
	return a, closed
}

// FileTools are the DSH tools that change a file.
var FileTools = []string{"write", "edit"}

// fileChange reports a successful call of a FileTools tool, keyed by the
// path its arguments name (so two edits of one file count once), else by
// the call.
func fileChange(p events.ToolResultPayload, eventID string) (bool, string) {
	if p.IsError || (p.Tool != FileTools[0] && p.Tool != FileTools[1]) {
		return false, ""
	}
	var args struct {
		Path     string `json:"path"`
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal([]byte(p.Command), &args) == nil {
		if path := cmp.Or(args.Path, args.FilePath); path != "" {
			return true, "path:" + path
		}
	}
	return true, "call:" + cmp.Or(p.CallID, eventID)
}

// openedAt is when the turn began: its first event.
func openedAt(t turn) time.Time {
	if len(t.rows) > 0 {
		return t.rows[0].Time
	}
	return t.end.Time
}

// turnStatus is a turn's outcome as a task status, from its turn_end
// reason: an error or a cut at max tokens failed, an abort is aborted,
// anything else (completed) succeeded.
func turnStatus(reason string) string {
	switch reason {
	case "error", "max-tokens":
		return store.TaskFailed
	case "aborted":
		return store.TaskAborted
	}
	return store.TaskSucceeded
}

func turnResult(p events.TurnEndPayload) string {
	r := "turn ended: " + cmp.Or(p.Reason, "unknown")
	if p.Error != "" {
		r += ": " + p.Error
	}
	return r
}
