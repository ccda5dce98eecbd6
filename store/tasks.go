package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Task kinds: one the agent opened (task_start), or one mull made of a
// substantive turn no task covered (reflection.turn_fallback).
const (
	TaskKindTask = "task"
	TaskKindTurn = "turn"
)

// Task statuses: open, then the seed's four outcomes (events.TaskStatuses).
const (
	TaskOpen      = "open"
	TaskSucceeded = "succeeded"
	TaskFailed    = "failed"
	TaskAbandoned = "abandoned"
	TaskAborted   = "aborted"
)

// Who reflected on a task.
const (
	ReflectedByJob   = "job"
	ReflectedByAgent = "agent"
)

// Task is a row of the tasks table. Zero times are NULL.
type Task struct {
	// ID is "task-<uuid>" or "turn-<session>-<turn>".
	ID        string
	Kind      string
	SessionID string
	Workspace string
	Goal      string
	Expected  string
	Status    string
	Result    string
	OpenedAt  time.Time
	ClosedAt  time.Time
	// OpenSeq and CloseSeq bound the task's window on its session's
	// events: seq in (OpenSeq, CloseSeq] (EventsBySeq).
	OpenSeq  int64
	CloseSeq int64
	// Environment is the decision environment, the JSON of the
	// lesson.Snapshot taken at open. It is written once: no statement of
	// the store updates it, and the database refuses one that tries.
	Environment string
	// EnvironmentIDs are the snapshot's lesson ids (detailed first), as
	// recorded at close; nil while open.
	EnvironmentIDs []int64
	// ReflectMode is job, agent or both (set at close).
	ReflectMode  string
	ReflectedAt  time.Time
	ReflectedBy  string
	ReflectJobID int64
}

// ErrTaskExists is returned by InsertTask for an id already stored.
var ErrTaskExists = errors.New("task already exists")

// TaskClosedError is CloseTask's refusal of a task closed before: the first
// close stands.
type TaskClosedError struct {
	ID       string
	Status   string
	ClosedAt time.Time
}

func (e *TaskClosedError) Error() string {
	return fmt.Sprintf("task %s is already closed (%s at %s)", e.ID, e.Status, e.ClosedAt.Format(time.RFC3339))
}

// TaskReflectedError is MarkTaskReflected's refusal of a task reflected on
// before: a task gets one reflection.
type TaskReflectedError struct {
	ID string
	By string
	At time.Time
}

func (e *TaskReflectedError) Error() string {
	return fmt.Sprintf("task %s was already reflected on (by %s at %s)", e.ID, e.By, e.At.Format(time.RFC3339))
}

const taskColumns = `id, kind, session_id, workspace, goal, expected, status, result, opened_at, closed_at,
	open_seq, close_seq, environment, environment_ids, reflect_mode, reflected_at, reflected_by, reflect_job_id`

// InsertTask stores a task opened now (status open) with its decision
// environment, and one task_lessons row per lesson of the environment (the
// precedent join's side of it), read from the environment itself so the two
// never disagree. A bad task is refused whole, naming what is wrong.
func (s *Store) InsertTask(ctx context.Context, q querier, t Task) error {
	if err := checkNewTask(t); err != nil {
		return fmt.Errorf("insert task %q: %w", t.ID, err)
	}
	env, err := parseEnvironment(t.Environment)
	if err != nil {
		return fmt.Errorf("insert task %s: %w", t.ID, err)
	}
	res, err := q.ExecContext(ctx, `insert into tasks (id, kind, session_id, workspace, goal, expected, status, result,
		opened_at, open_seq, environment) values ($1, $2, $3, $4, $5, $6, $7, '', $8, $9, $10) on conflict (id) do nothing`,
		t.ID, t.Kind, t.SessionID, t.Workspace, t.Goal, t.Expected, TaskOpen, utcMicro(t.OpenedAt), t.OpenSeq, t.Environment)
	if err != nil {
		return fmt.Errorf("insert task %s: %w", t.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cmp.Or(err, fmt.Errorf("insert task %s: %w", t.ID, ErrTaskExists))
	}
	for _, l := range env {
		if _, err := q.ExecContext(ctx, `insert into task_lessons (task_id, lesson_id, detailed) values ($1, $2, $3)`,
			t.ID, l.id, l.detailed); err != nil {
			return fmt.Errorf("insert task %s: lesson %d: %w", t.ID, l.id, err)
		}
	}
	return nil
}

func checkNewTask(t Task) error {
	switch {
	case strings.TrimSpace(t.ID) == "":
		return errors.New("id is required")
	case t.Kind != TaskKindTask && t.Kind != TaskKindTurn:
		return fmt.Errorf("kind %q is not %s or %s", t.Kind, TaskKindTask, TaskKindTurn)
	case strings.TrimSpace(t.SessionID) == "":
		return errors.New("session_id is required")
	case strings.TrimSpace(t.Goal) == "":
		return errors.New("goal is required")
	case t.Status != "" && t.Status != TaskOpen:
		return fmt.Errorf("status %q: a task is stored open; CloseTask ends it", t.Status)
	case t.OpenedAt.IsZero():
		return errors.New("opened_at is required")
	case t.OpenSeq < 0:
		return fmt.Errorf("open_seq %d is negative", t.OpenSeq)
	}
	return nil
}

type envLesson struct {
	id       int64
	detailed bool
}

// parseEnvironment reads the lesson ids of a snapshot's JSON (the fields of
// lesson.Snapshot the store needs; store does not import learn), detailed
// first, refusing one that is not a snapshot.
func parseEnvironment(env string) ([]envLesson, error) {
	var snap struct {
		Count   *int `json:"count"`
		Lessons []struct {
			ID int64 `json:"id"`
		} `json:"lessons"`
		Omitted []struct {
			ID int64 `json:"id"`
		} `json:"omitted"`
	}
	if err := json.Unmarshal([]byte(env), &snap); err != nil {
		return nil, fmt.Errorf("environment is not a snapshot's JSON: %w", err)
	}
	if snap.Count == nil {
		return nil, errors.New("environment has no count: not a snapshot")
	}
	if n := len(snap.Lessons) + len(snap.Omitted); *snap.Count != n {
		return nil, fmt.Errorf("environment count %d does not match its %d lessons", *snap.Count, n)
	}
	out := make([]envLesson, 0, *snap.Count)
	seen := map[int64]bool{}
	add := func(id int64, detailed bool) error {
		switch {
		case id <= 0:
			return fmt.Errorf("environment lesson id %d is not a memory id", id)
		case seen[id]:
			return fmt.Errorf("environment lists lesson %d twice", id)
		}
		seen[id] = true
		out = append(out, envLesson{id, detailed})
		return nil
	}
	for _, l := range snap.Lessons {
		if err := add(l.ID, true); err != nil {
			return nil, err
		}
	}
	for _, o := range snap.Omitted {
		if err := add(o.ID, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GetTask reads one task, or ErrNotFound.
func (s *Store) GetTask(ctx context.Context, q querier, id string) (Task, error) {
	t, err := scanTask(q.QueryRowContext(ctx, `select `+taskColumns+` from tasks where id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	return t, err
}

// TaskClose is how a task ended.
type TaskClose struct {
	// Status is succeeded, failed, abandoned or aborted.
	Status string
	Result string
	At     time.Time
	// CloseSeq is the session's last event seq at close (LastEventSeq).
	CloseSeq int64
	// ReflectMode is job, agent or both: who is to reflect on it.
	ReflectMode string
}

// CloseTask ends an open task and records its environment_ids (the ids of
// the environment it froze at open) and returns it closed. A task closed
// before is refused with *TaskClosedError, an unknown one with ErrNotFound.
func (s *Store) CloseTask(ctx context.Context, q querier, id string, c TaskClose) (Task, error) {
	if err := checkClose(c); err != nil {
		return Task{}, fmt.Errorf("close task %s: %w", id, err)
	}
	t, err := s.GetTask(ctx, q, id)
	if err != nil {
		return Task{}, fmt.Errorf("close task: %w", err)
	}
	if t.Status != TaskOpen {
		return Task{}, &TaskClosedError{ID: id, Status: t.Status, ClosedAt: t.ClosedAt}
	}
	if c.CloseSeq < t.OpenSeq {
		return Task{}, fmt.Errorf("close task %s: close_seq %d is before its open_seq %d", id, c.CloseSeq, t.OpenSeq)
	}
	env, err := parseEnvironment(t.Environment)
	if err != nil {
		return Task{}, fmt.Errorf("close task %s: %w", id, err)
	}
	ids := make([]int64, len(env))
	for i, l := range env {
		ids[i] = l.id
	}
	idsJSON, _ := json.Marshal(ids) // an []int64 always marshals
	// The status condition makes a close racing this one (Postgres) lose
	// here rather than overwrite it.
	res, err := q.ExecContext(ctx, `update tasks set status = $2, result = $3, closed_at = $4, close_seq = $5,
		environment_ids = $6, reflect_mode = $7 where id = $1 and status = $8`,
		id, c.Status, c.Result, utcMicro(c.At), c.CloseSeq, string(idsJSON), c.ReflectMode, TaskOpen)
	if err != nil {
		return Task{}, fmt.Errorf("close task %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			return Task{}, err
		}
		now, err := s.GetTask(ctx, q, id)
		if err != nil {
			return Task{}, err
		}
		return Task{}, &TaskClosedError{ID: id, Status: now.Status, ClosedAt: now.ClosedAt}
	}
	t.Status, t.Result, t.ClosedAt, t.CloseSeq = c.Status, c.Result, utcMicro(c.At), c.CloseSeq
	t.EnvironmentIDs, t.ReflectMode = ids, c.ReflectMode
	return t, nil
}

func checkClose(c TaskClose) error {
	switch c.Status {
	case TaskSucceeded, TaskFailed, TaskAbandoned, TaskAborted:
	default:
		return fmt.Errorf("status %q is not one of succeeded, failed, abandoned, aborted", c.Status)
	}
	switch {
	case c.At.IsZero():
		return errors.New("the close time is required")
	case c.ReflectMode != "" && c.ReflectMode != "job" && c.ReflectMode != "agent" && c.ReflectMode != "both":
		return fmt.Errorf("reflect mode %q is not job, agent or both", c.ReflectMode)
	}
	return nil
}

// SetTaskReflectJob records the reflect_task job enqueued for a task.
func (s *Store) SetTaskReflectJob(ctx context.Context, q querier, id string, jobID int64) error {
	res, err := q.ExecContext(ctx, `update tasks set reflect_job_id = $2 where id = $1`, id, jobID)
	if err != nil {
		return fmt.Errorf("task %s: record reflect job: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cmp.Or(err, fmt.Errorf("task %s: %w", id, ErrNotFound))
	}
	return nil
}

// MarkTaskReflected records that by (job or agent) reflected on a closed
// task at at. A task is reflected on once: a second time is refused with
// *TaskReflectedError (a replayed job, or the agent after the job), an
// open task with an error, an unknown one with ErrNotFound.
func (s *Store) MarkTaskReflected(ctx context.Context, q querier, id, by string, at time.Time) error {
	if by != ReflectedByJob && by != ReflectedByAgent {
		return fmt.Errorf("task %s: reflected by %q is not %s or %s", id, by, ReflectedByJob, ReflectedByAgent)
	}
	res, err := q.ExecContext(ctx, `update tasks set reflected_at = $2, reflected_by = $3
		where id = $1 and reflected_at is null and status <> $4`, id, utcMicro(at), by, TaskOpen)
	if err != nil {
		return fmt.Errorf("task %s: mark reflected: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	t, err := s.GetTask(ctx, q, id)
	switch {
	case err != nil:
		return err
	case t.Status == TaskOpen:
		return fmt.Errorf("task %s is still open: close it before reflecting on it", id)
	}
	return &TaskReflectedError{ID: id, By: t.ReflectedBy, At: t.ReflectedAt}
}

// TaskFilter narrows ListTasks. Empty fields match everything.
type TaskFilter struct {
	SessionID string
	Workspace string
	// Status is open or one of the outcomes.
	Status string
	// Closed keeps tasks with any outcome.
	Closed bool
	// Unreflected keeps closed tasks nobody reflected on yet.
	Unreflected bool
	// Limit defaults to 100 and is capped at 1000.
	Limit int
}

// ListTasks lists tasks, oldest opened first.
func (s *Store) ListTasks(ctx context.Context, q querier, f TaskFilter) ([]Task, error) {
	where, args := []string{"1 = 1"}, []any{}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.SessionID != "" {
		add("session_id = $%d", f.SessionID)
	}
	if f.Workspace != "" {
		add("workspace = $%d", f.Workspace)
	}
	if f.Status != "" {
		add("status = $%d", f.Status)
	}
	if f.Closed {
		add("status <> $%d", TaskOpen)
	}
	if f.Unreflected {
		add("status <> $%d and reflected_at is null", TaskOpen)
	}
	args = append(args, min(cmp.Or(f.Limit, 100), 1000))
	rows, err := q.QueryContext(ctx, `select `+taskColumns+` from tasks where `+strings.Join(where, " and ")+
		` order by opened_at, id limit $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func scanTask(row scanner) (Task, error) {
	var t Task
	var closed, reflected sql.NullTime
	var ids string
	err := row.Scan(&t.ID, &t.Kind, &t.SessionID, &t.Workspace, &t.Goal, &t.Expected, &t.Status, &t.Result,
		&t.OpenedAt, &closed, &t.OpenSeq, &t.CloseSeq, &t.Environment, &ids, &t.ReflectMode, &reflected,
		&t.ReflectedBy, &t.ReflectJobID)
	if err != nil {
		return t, err
	}
	t.OpenedAt = t.OpenedAt.UTC()
	if closed.Valid {
		t.ClosedAt = closed.Time.UTC()
	}
	if reflected.Valid {
		t.ReflectedAt = reflected.Time.UTC()
	}
	if t.EnvironmentIDs, err = parseIDs(ids); err != nil {
		return t, fmt.Errorf("task %s: bad environment_ids: %w", t.ID, err)
	}
	return t, nil
}

func parseIDs(s string) ([]int64, error) {
	if s == "" {
		return nil, nil
	}
	ids := []int64{}
	err := json.Unmarshal([]byte(s), &ids)
	return ids, err
}

// TaskOutcome is what the precedent rules (learn/lesson.TaskOutcome) read
// of a task: how it ended and the lessons its environment held.
type TaskOutcome struct {
	ID     string
	Status string
	// Closed: the task has a close record.
	Closed bool
	// EnvironmentIDs are the ids recorded at close; nil while open.
	EnvironmentIDs []int64
	// Turn: a per-turn fallback's task (kind turn), never precedent or
	// evidence.
	Turn bool
}

// TaskOutcomes lists the outcome of every task whose environment held one
// of lessonIDs (nil: every task), by id.
func (s *Store) TaskOutcomes(ctx context.Context, q querier, lessonIDs []int64) ([]TaskOutcome, error) {
	query := `select id, status, closed_at is not null, environment_ids, kind = 'turn' from tasks`
	var args []any
	if lessonIDs != nil {
		if len(lessonIDs) == 0 {
			return nil, nil
		}
		var in string
		in, args = idList(lessonIDs, 0)
		query += ` where id in (select task_id from task_lessons where lesson_id in (` + in + `))`
	}
	rows, err := q.QueryContext(ctx, query+` order by id`, args...)
	if err != nil {
		return nil, fmt.Errorf("task outcomes: %w", err)
	}
	defer rows.Close()
	var out []TaskOutcome
	for rows.Next() {
		var o TaskOutcome
		var ids string
		if err := rows.Scan(&o.ID, &o.Status, &o.Closed, &ids, &o.Turn); err != nil {
			return nil, err
		}
		if o.EnvironmentIDs, err = parseIDs(ids); err != nil {
			return nil, fmt.Errorf("task %s: bad environment_ids: %w", o.ID, err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// Precedent is a lesson's record over closed tasks whose environment held
// it: Verified succeeded, Counter failed, Exposures every closed one
// (abandoned and aborted count only there). learn/lesson.Precedents is the
// rule; this is the same count in SQL, for many lessons at once.
type Precedent struct {
	Verified  int
	Counter   int
	Exposures int
}

// PrecedentCounts counts the precedent of lessonIDs (nil: every lesson in
// some task's environment). A lesson in no closed task's environment has no
// entry.
func (s *Store) PrecedentCounts(ctx context.Context, q querier, lessonIDs []int64) (map[int64]Precedent, error) {
	return s.PrecedentCountsAt(ctx, q, lessonIDs, time.Time{})
}

// PrecedentCountsAt is PrecedentCounts over the tasks closed at or before
// at (zero: every closed task): the counts a digest published at at shows,
// the same however much later it is rendered.
func (s *Store) PrecedentCountsAt(ctx context.Context, q querier, lessonIDs []int64, at time.Time) (map[int64]Precedent, error) {
	args := []any{TaskSucceeded, TaskFailed, TaskOpen}
	where := ""
	if !at.IsZero() {
		args = append(args, utcMicro(at))
		where = ` and t.closed_at <= $` + strconv.Itoa(len(args))
	}
	if lessonIDs != nil {
		if len(lessonIDs) == 0 {
			return map[int64]Precedent{}, nil
		}
		in, more := idList(lessonIDs, len(args))
		args = append(args, more...)
		where += ` and tl.lesson_id in (` + in + `)`
	}
	rows, err := q.QueryContext(ctx, `select tl.lesson_id,
		coalesce(sum(case when t.status = $1 then 1 else 0 end), 0),
		coalesce(sum(case when t.status = $2 then 1 else 0 end), 0),
		count(*)
		from task_lessons tl join tasks t on t.id = tl.task_id
		where t.status <> $3 and t.closed_at is not null and t.kind <> 'turn'`+where+` group by tl.lesson_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("precedent counts: %w", err)
	}
	defer rows.Close()
	out := map[int64]Precedent{}
	for rows.Next() {
		var id int64
		var p Precedent
		if err := rows.Scan(&id, &p.Verified, &p.Counter, &p.Exposures); err != nil {
			return nil, err
		}
		out[id] = p
	}
	return out, rows.Err()
}

// idList is "$n+1, $n+2, …" for ids, deduplicated, and its arguments.
func idList(ids []int64, n int) (string, []any) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	ph := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		ph[i] = "$" + strconv.Itoa(n+i+1)
		args[i] = id
	}
	return strings.Join(ph, ", "), args
}

// SessionSawLesson reports whether lesson id was in the start environment
// of a task of session (lessons_lookup shows it to that session then).
func (s *Store) SessionSawLesson(ctx context.Context, q querier, session string, id int64) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `select count(*) from task_lessons tl join tasks t on t.id = tl.task_id
		where t.session_id = $1 and tl.lesson_id = $2`, session, id).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("lesson %d in session %s's tasks: %w", id, session, err)
	}
	return n > 0, nil
}

// CounterexampleTasks lists the closed failed tasks (not turn tasks) that
// had lesson id in their start environment, newest first, at most limit:
// the evidence a revise of it may cite.
func (s *Store) CounterexampleTasks(ctx context.Context, q querier, id int64, limit int) ([]string, error) {
	rows, err := q.QueryContext(ctx, `select t.id from task_lessons tl join tasks t on t.id = tl.task_id
		where tl.lesson_id = $1 and t.status = $2 and t.kind <> 'turn' and t.closed_at is not null
		order by t.closed_at desc, t.id limit $3`, id, TaskFailed, limit)
	if err != nil {
		return nil, fmt.Errorf("counterexamples of lesson %d: %w", id, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
