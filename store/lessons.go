package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// lessonKinds are the structured kinds of the lesson model (memory.Lesson,
// memory.Directive, memory.Failure).
var lessonKinds = []string{"lesson", "directive", "failure"}

// lessonKindList is lessonKinds as an SQL list of constants.
const lessonKindList = "('lesson', 'directive', 'failure')"

// StateError is SetMemoryState's refusal of a move the lifecycle forbids:
// nothing goes back to active, nothing leaves deleted, and only an active
// memory becomes superseded or deprecated (learn/lesson.Transition is the
// rule; the store holds it too, in the update's condition).
type StateError struct {
	ID       int64
	From, To string
}

func (e *StateError) Error() string {
	return fmt.Sprintf("memory %d: cannot go from %s to %s", e.ID, e.From, e.To)
}

// SetMemoryState moves a memory to state (superseded, deprecated or
// deleted) at at. The first move out of active sets invalid_at, the reason
// and supersededBy, so the two timelines say when it stopped being
// believed; a later move to deleted keeps them and changes only the state.
// Nothing is removed, and nothing is revived: a refused move is a
// *StateError, an unknown memory ErrNotFound.
func (s *Store) SetMemoryState(ctx context.Context, q querier, id int64, state string, at time.Time, reason string, supersededBy int64) error {
	switch state {
	case StateSuperseded, StateDeprecated, StateDeleted:
	case StateActive:
		m, err := s.GetMemory(ctx, q, id)
		if err != nil {
			return err
		}
		return &StateError{ID: id, From: m.State, To: state}
	default:
		return fmt.Errorf("memory %d: state %q is not one of superseded, deprecated, deleted", id, state)
	}
	if at.IsZero() {
		return fmt.Errorf("memory %d: the time of the move to %s is required", id, state)
	}
	if state != StateSuperseded {
		supersededBy = 0
	}
	res, err := q.ExecContext(ctx, `update memories set state = $2,
		invalid_reason = case when invalid_at is null then $4 else invalid_reason end,
		superseded_by = case when invalid_at is null then $5 else superseded_by end,
		invalid_at = coalesce(invalid_at, $3)
		where id = $1 and (state = $6 or ($2 = $7 and state in ($8, $9)))`,
		id, state, utcMicro(at), reason, supersededBy, StateActive, StateDeleted, StateSuperseded, StateDeprecated)
	if err != nil {
		return fmt.Errorf("memory %d: set state %s: %w", id, state, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	m, err := s.GetMemory(ctx, q, id)
	if err != nil {
		return err
	}
	return &StateError{ID: id, From: m.State, To: state}
}

// LessonFilter narrows ListLessons. Empty fields match everything.
type LessonFilter struct {
	// Workspaces are the libraries to read ("" is the global one); nil
	// reads all of them.
	Workspaces []string
	// Scopes keeps these scopes (global, workspace, session, reflection).
	Scopes []string
	// Session keeps lessons whose scope names this session.
	Session string
	// States keeps these states; nil keeps every state.
	States []string
	// IDs keeps these memories.
	IDs []int64
	// Quarantined includes quarantined lessons (never served; check shows
	// them).
	Quarantined bool
}

// ListLessons lists the memories of the structured kinds (lesson,
// directive, failure), by id.
func (s *Store) ListLessons(ctx context.Context, q querier, f LessonFilter) ([]Memory, error) {
	where, args := memoryWhere(f.Workspaces, false)
	in := func(col string, vals []string) {
		if len(vals) == 0 {
			where += " and 1 = 0"
			return
		}
		ph := make([]string, len(vals))
		for i, v := range vals {
			args = append(args, v)
			ph[i] = "$" + strconv.Itoa(len(args))
		}
		where += " and " + col + " in (" + strings.Join(ph, ", ") + ")"
	}
	in("kind", lessonKinds)
	if f.Scopes != nil {
		in("scope", f.Scopes)
	}
	if f.States != nil {
		in("state", f.States)
	}
	if f.Session != "" {
		in("scope_session", []string{f.Session})
	}
	if f.IDs != nil {
		if len(f.IDs) == 0 {
			return nil, nil
		}
		ph, more := idList(f.IDs, len(args))
		args = append(args, more...)
		where += " and id in (" + ph + ")"
	}
	if !f.Quarantined {
		where += " and not quarantined"
	}
	rows, err := s.queryMemories(ctx, q, `select `+memoryColumns+` from memories where `+where+` order by id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list lessons: %w", err)
	}
	return rows, nil
}

// Link is a declared conflict between two lessons (memory.Conflict), kept
// and shown, never resolved by mull.
type Link struct {
	ID     int64
	FromID int64
	ToID   int64
	// Kind is condition, goal, contradiction or apparent.
	Kind       string
	Note       string
	RecordedAt time.Time
	// JobID and TaskID say who declared it (0 / '' none).
	JobID  int64
	TaskID string
}

// InsertLink stores a declared conflict between two stored memories and
// returns its id.
func (s *Store) InsertLink(ctx context.Context, q querier, l Link) (int64, error) {
	switch l.Kind {
	case "condition", "goal", "contradiction", "apparent":
	default:
		return 0, fmt.Errorf("insert link: kind %q is not one of condition, goal, contradiction, apparent", l.Kind)
	}
	switch {
	case l.FromID == l.ToID:
		return 0, fmt.Errorf("insert link: memory %d cannot conflict with itself", l.FromID)
	case l.RecordedAt.IsZero():
		return 0, errors.New("insert link: recorded_at is required")
	}
	for _, id := range []int64{l.FromID, l.ToID} {
		if _, err := s.GetMemory(ctx, q, id); err != nil {
			return 0, fmt.Errorf("insert link: %w", err)
		}
	}
	var id int64
	err := q.QueryRowContext(ctx, `insert into memory_links (from_id, to_id, kind, note, recorded_at, job_id, task_id)
		values ($1, $2, $3, $4, $5, $6, $7) returning id`,
		l.FromID, l.ToID, l.Kind, l.Note, utcMicro(l.RecordedAt), l.JobID, l.TaskID).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert link %d→%d: %w", l.FromID, l.ToID, err)
	}
	return id, nil
}

// ListLinks lists the conflicts that touch any of ids, from or to (nil:
// every link), by id.
func (s *Store) ListLinks(ctx context.Context, q querier, ids []int64) ([]Link, error) {
	query := `select id, from_id, to_id, kind, note, recorded_at, job_id, task_id from memory_links`
	var args []any
	if ids != nil {
		if len(ids) == 0 {
			return nil, nil
		}
		var in string
		in, args = idList(ids, 0)
		query += ` where from_id in (` + in + `) or to_id in (` + in + `)`
	}
	rows, err := q.QueryContext(ctx, query+` order by id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	defer rows.Close()
	var out []Link
	for rows.Next() {
		var l Link
		if err := rows.Scan(&l.ID, &l.FromID, &l.ToID, &l.Kind, &l.Note, &l.RecordedAt, &l.JobID, &l.TaskID); err != nil {
			return nil, err
		}
		l.RecordedAt = l.RecordedAt.UTC()
		out = append(out, l)
	}
	return out, rows.Err()
}
