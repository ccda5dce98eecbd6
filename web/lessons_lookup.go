package web

import (
	"errors"
	"net/http"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

type lessonView struct {
	// Page is "" (lesson.html's other page is "items").
	Page string
	L    lessonRow
	// Asker is the session or workspace the lookup is made as: one the
	// lesson's scope reaches.
	Asker memories.Asker
	// Lookup is lessons_lookup's text for the asker; LookupRefused, when
	// the lookup is refused, why (what the agent gets instead: a 404).
	Lookup        string
	LookupRefused string
	Links         []store.Link
	// Items are the reflection items that wrote, repeated or revised it.
	Items []itemListRow
}

// lessonPage shows one lesson and what lessons_lookup answers an agent
// for it: the same text, through the same service, asked as a session
// (or workspace) the lesson's scope reaches.
func (p *Panel) lessonPage(w http.ResponseWriter, r *http.Request) error {
	if err := p.needLessons(); err != nil {
		return err
	}
	id, err := lesson.ParseLessonRef(r.PathValue("id"))
	if err != nil {
		return Errorf(http.StatusBadRequest, "%q is not a lesson id (L42 or 42): %v", r.PathValue("id"), err)
	}
	ctx, st := r.Context(), p.deps.Store
	row, err := st.GetMemory(ctx, st.DB, id)
	if errors.Is(err, store.ErrNotFound) {
		return Errorf(http.StatusNotFound, "mull has no memory %d", id)
	} else if err != nil {
		return err
	}
	m := memories.FromRow(row)
	if !m.Kind.Structured() {
		return Errorf(http.StatusNotFound, "memory %d is a %s, not a structured lesson: see /memories/%d", id, m.Kind, id)
	}
	rows, err := p.lessonRows(r, []store.Memory{row})
	if err != nil {
		return err
	}
	v := lessonView{L: rows[0], Asker: askerOf(m)}
	looked, err := p.deps.Memories.LookupLesson(ctx, id, v.Asker)
	var le *memories.LookupError
	switch {
	case errors.As(err, &le):
		v.LookupRefused = le.Error()
	case err != nil:
		return err
	default:
		v.Lookup = looked.Text
	}
	if v.Links, err = st.ListLinks(ctx, st.DB, []int64{id}); err != nil {
		return err
	}
	items, err := st.PanelReflectionItems(ctx, store.ItemPage{Memory: id, Limit: 50})
	if err != nil {
		return err
	}
	v.Items = itemListRows(items)
	return p.page(w, r, "lesson", "lessons", "Lesson "+lesson.LessonRef(id), v)
}

// askerOf is who may look m up: its named or source session, its
// workspace's sessions, or anyone for a global lesson.
func askerOf(m memory.Memory) memories.Asker {
	switch lesson.ScopeOf(m) {
	case memory.LessonSession, memory.LessonReflection:
		return memories.Asker{Workspace: m.Workspace, Session: m.ScopeSession}
	case memory.LessonWorkspace:
		return memories.Asker{Workspace: m.Workspace}
	}
	return memories.Asker{}
}
