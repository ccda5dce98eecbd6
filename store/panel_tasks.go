package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// The panel's list of tasks (web/lessons_tasks.go): the rows behind a lesson's
// precedent counts (verified, counterexamples, exposures).

// TaskPage narrows PanelTasks. Empty fields match everything.
type TaskPage struct {
	// Lesson keeps the tasks its precedent counts (PrecedentCounts): the
	// closed tasks, turns aside, that had the lesson in force at their
	// start.
	Lesson int64
	// Status keeps the tasks closed so (succeeded, failed, …).
	Status string
	// Limit defaults to 50 and is capped at 1000.
	Limit, Offset int
}

// PanelTasks lists a page of tasks, the last closed first (open ones
// first of all, without Lesson).
func (s *Store) PanelTasks(ctx context.Context, f TaskPage) ([]Task, error) {
	where, args := []string{"1 = 1"}, []any{}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	if f.Lesson != 0 {
		// PrecedentCounts's condition, word for word.
		add("t.status <> $?", TaskOpen)
		where = append(where, "t.closed_at is not null", "t.kind <> 'turn'")
		add("exists (select 1 from task_lessons tl where tl.task_id = t.id and tl.lesson_id = $?)", f.Lesson)
	}
	if f.Status != "" {
		add("t.status = $?", f.Status)
	}
	args = append(args, clampLimit(f.Limit), max(f.Offset, 0))
	cols := "t." + strings.Join(strings.Fields(strings.ReplaceAll(taskColumns, ",", " ")), ", t.")
	out, err := queryAll(ctx, s.DB, scanTask, `select `+cols+` from tasks t where `+strings.Join(where, " and ")+`
		order by case when t.closed_at is null then 0 else 1 end, t.closed_at desc, t.opened_at desc, t.id desc
		limit $`+strconv.Itoa(len(args)-1)+` offset $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}
