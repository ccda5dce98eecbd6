package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The panel's reads of structured lessons and of what the reflections did
// (web/lessons.go). Every list is a page: a limit and an offset.

// lessonScopeExpr is a lesson's scope as learn/lesson.ScopeOf reads it: a
// lesson written before scopes is global without a workspace and
// workspace-scoped with one.
const lessonScopeExpr = `case when scope <> '' then scope when workspace = '' then 'global' else 'workspace' end`

// LessonPage narrows PanelLessons. Empty fields match everything.
type LessonPage struct {
	// Scope is global, workspace, session or reflection (as ScopeOf).
	Scope string
	// State is active, superseded, deprecated or deleted; Quarantined
	// keeps only the quarantined lessons.
	State       string
	Quarantined bool
	Workspace   string
	Kind        string
	// Task keeps the lessons in force at that task's start (its
	// task_lessons rows).
	Task string
	// Limit defaults to 50 and is capped at 1000.
	Limit, Offset int
}

// PanelLessons lists a page of structured lessons (every state,
// quarantined ones included), newest first.
func (s *Store) PanelLessons(ctx context.Context, f LessonPage) ([]Memory, error) {
	where, args := []string{"kind in " + lessonKindList}, []any{}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	if f.Scope != "" {
		add(lessonScopeExpr+" = $?", f.Scope)
	}
	if f.State != "" {
		add("state = $?", f.State)
	}
	if f.Quarantined {
		where = append(where, "quarantined")
	}
	if f.Workspace != "" {
		add("workspace = $?", f.Workspace)
	}
	if f.Kind != "" {
		add("kind = $?", f.Kind)
	}
	if f.Task != "" {
		add("id in (select lesson_id from task_lessons where task_id = $?)", f.Task)
	}
	args = append(args, clampLimit(f.Limit), max(f.Offset, 0))
	out, err := s.queryMemories(ctx, s.DB, `select `+memoryColumns+` from memories where `+strings.Join(where, " and ")+
		` order by id desc limit $`+strconv.Itoa(len(args)-1)+` offset $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list lessons: %w", err)
	}
	return out, nil
}

// LessonCount is how many structured lessons have one scope and state
// (quarantined ones apart).
type LessonCount struct {
	Scope, State string
	Quarantined  bool
	N            int64
}

// LessonCounts counts the structured lessons by scope, state and
// quarantine.
func (s *Store) LessonCounts(ctx context.Context) ([]LessonCount, error) {
	out, err := queryAll(ctx, s.DB, func(r scanner) (LessonCount, error) {
		var c LessonCount
		return c, r.Scan(&c.Scope, &c.State, &c.Quarantined, &c.N)
	}, `select `+lessonScopeExpr+` as sc, state, quarantined, count(*) from memories where kind in `+lessonKindList+`
		group by sc, state, quarantined order by sc, state, quarantined`)
	if err != nil {
		return nil, fmt.Errorf("count lessons: %w", err)
	}
	return out, nil
}

// ReflectionItemRow is a reflection item with its reflection and task.
type ReflectionItemRow struct {
	ReflectionItem
	ReflectionID int64
	TaskID       string
	SessionID    string
	Workspace    string
	By           string
	JobID        int64
	RecordedAt   time.Time
}

// ItemPage narrows PanelReflectionItems. Empty fields match everything.
type ItemPage struct {
	Relation string
	// Check keeps the items that check refused; Refused every refused
	// item; Accepted every item no check refused.
	Check             string
	Refused, Accepted bool
	Workspace         string
	// Memory keeps the items that wrote this memory or named it as their
	// target (a repeat or revise of it).
	Memory int64
	// Limit defaults to 50 and is capped at 1000.
	Limit, Offset int
}

// PanelReflectionItems lists a page of the reflections' items, newest
// first: what each proposed lesson became, and why a refused one was.
func (s *Store) PanelReflectionItems(ctx context.Context, f ItemPage) ([]ReflectionItemRow, error) {
	where, args := []string{"1 = 1"}, []any{}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	if f.Relation != "" {
		add("i.relation = $?", f.Relation)
	}
	if f.Check != "" {
		add("i.refused_check = $?", f.Check)
	}
	if f.Refused {
		where = append(where, "i.refused_check <> ''")
	}
	if f.Accepted {
		where = append(where, "i.refused_check = ''")
	}
	if f.Workspace != "" {
		add("t.workspace = $?", f.Workspace)
	}
	if f.Memory != 0 {
		add("(i.memory_id = $? or i.target_id = $?)", f.Memory)
	}
	args = append(args, clampLimit(f.Limit), max(f.Offset, 0))
	out, err := queryAll(ctx, s.DB, func(r scanner) (ReflectionItemRow, error) {
		var x ReflectionItemRow
		err := r.Scan(&x.Index, &x.Relation, &x.TargetID, &x.MemoryID, &x.RefusedCheck, &x.RefusedReason, &x.Critique, &x.Verdict,
			&x.ReflectionID, &x.TaskID, &x.SessionID, &x.Workspace, &x.By, &x.JobID, &x.RecordedAt)
		x.RecordedAt = x.RecordedAt.UTC()
		return x, err
	}, `select i.idx, i.relation, i.target_id, i.memory_id, i.refused_check, i.refused_reason, i.critique, i.verdict,
		r.id, r.task_id, t.session_id, t.workspace, r.reflected_by, r.job_id, r.recorded_at
		from reflection_items i join reflections r on r.id = i.reflection_id join tasks t on t.id = r.task_id
		where `+strings.Join(where, " and ")+` order by r.recorded_at desc, r.id desc, i.idx
		limit $`+strconv.Itoa(len(args)-1)+` offset $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list reflection items: %w", err)
	}
	return out, nil
}
