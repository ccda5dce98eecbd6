package web

import (
	"errors"
	"net/http"
	"slices"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// lessonTaskStatuses are the outcomes /lessons/{id}/tasks filters on: a
// lesson's verified count is its succeeded tasks, its counterexamples its
// failed ones; without a status, its exposures.
var lessonTaskStatuses = []string{store.TaskSucceeded, store.TaskFailed, store.TaskAbandoned, store.TaskAborted}

type lessonTasksView struct {
	ID       int64
	Ref      string
	Status   string
	Statuses []string
	Tasks    []store.Task
	Pager    Pager
}

// lessonTasks lists the tasks behind a lesson's precedent: the closed
// tasks (turns aside) that had it in force at their start, last closed
// first; ?status=succeeded lists its verified count's, failed its
// counterexamples'.
func (p *Panel) lessonTasks(w http.ResponseWriter, r *http.Request) error {
	if err := p.needStore(); err != nil {
		return err
	}
	id, err := lesson.ParseLessonRef(r.PathValue("id"))
	if err != nil {
		return Errorf(http.StatusBadRequest, "%q is not a lesson id (L42 or 42): %v", r.PathValue("id"), err)
	}
	v := lessonTasksView{ID: id, Ref: lesson.LessonRef(id), Status: r.URL.Query().Get("status"), Statuses: lessonTaskStatuses,
		Pager: pager(r, 50)}
	if v.Status != "" && !slices.Contains(lessonTaskStatuses, v.Status) {
		return Errorf(http.StatusBadRequest, "status %q is not one of %v", v.Status, lessonTaskStatuses)
	}
	ctx, st := r.Context(), p.deps.Store
	row, err := st.GetMemory(ctx, st.DB, id)
	if errors.Is(err, store.ErrNotFound) {
		return Errorf(http.StatusNotFound, "mull has no memory %d", id)
	} else if err != nil {
		return err
	}
	// As the lesson's own page: only a structured lesson has precedent.
	if k := memories.FromRow(row).Kind; !k.Structured() {
		return Errorf(http.StatusNotFound, "memory %d is a %s, not a structured lesson: it has no tasks; see /memories/%d", id, k, id)
	}
	rows, err := st.PanelTasks(ctx, store.TaskPage{Lesson: id, Status: v.Status, Limit: v.Pager.Limit(), Offset: v.Pager.Offset()})
	if err != nil {
		return err
	}
	v.Tasks = rows[:v.Pager.Trim(len(rows))]
	return p.page(w, r, "lesson_tasks", "lessons", "Tasks of lesson "+v.Ref, v)
}
