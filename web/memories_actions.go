package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// memoryAction reads an action's memory id and checks the service is
// there.
func (p *Panel) memoryAction(r *http.Request) (int64, error) {
	if p.deps.Memories == nil {
		return 0, Errorf(http.StatusServiceUnavailable, "the memories service is not configured")
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, Errorf(http.StatusNotFound, "no memory %q", r.PathValue("id"))
	}
	return id, nil
}

// actionError turns a service's refusal into an error shown in place: a
// bad field or a refusal is the operator's to fix (422), an unknown
// memory a 404, anything else a 500.
func actionError(err error) error {
	var field *memory.FieldError
	var notLive *memories.NotLiveError
	var refused *memories.RefusedError
	var notLesson *memories.NotLessonError
	var noSession *memories.NoSessionError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return Errorf(http.StatusNotFound, "%v", err)
	case errors.As(err, &field), errors.As(err, &notLive), errors.As(err, &refused), errors.As(err, &notLesson),
		errors.As(err, &noSession):
		return Errorf(http.StatusUnprocessableEntity, "%v", err)
	}
	return err
}

func memoryPath(id int64) string { return "/memories/" + strconv.FormatInt(id, 10) }

// memoryInvalidate marks a memory invalid now, for the form's reason
// (memories.Service.Invalidate: nothing is deleted; a memory already
// invalid keeps its first invalidation).
func (p *Panel) memoryInvalidate(w http.ResponseWriter, r *http.Request) error {
	id, err := p.memoryAction(r)
	if err != nil {
		return err
	}
	m, changed, err := p.deps.Memories.Invalidate(r.Context(), id, r.PostForm.Get("reason"), 0)
	if err != nil {
		return actionError(err)
	}
	if !changed {
		return p.done(w, r, memoryPath(id), "memory "+strconv.FormatInt(id, 10)+" was already invalid ("+m.InvalidReason+"): its first invalidation stands")
	}
	return p.done(w, r, memoryPath(id), "memory "+strconv.FormatInt(id, 10)+" invalidated: "+m.InvalidReason)
}

// memoryVerify records that the operator confirmed the memory now.
func (p *Panel) memoryVerify(w http.ResponseWriter, r *http.Request) error {
	id, err := p.memoryAction(r)
	if err != nil {
		return err
	}
	if _, err := p.deps.Memories.Verify(r.Context(), id, store.ActorPanel); err != nil {
		return actionError(err)
	}
	return p.done(w, r, memoryPath(id), "memory "+strconv.FormatInt(id, 10)+" verified")
}

// memoryMove moves a memory to another scope: a structured lesson by
// MoveLesson (to global, workspace:W or session:S, with a boundary), any
// other memory to another library by MoveMemory (to (global) or a
// workspace). Either writes the memory anew there and keeps the source's
// history; the page of the new memory follows.
func (p *Panel) memoryMove(w http.ResponseWriter, r *http.Request) error {
	id, err := p.memoryAction(r)
	if err != nil {
		return err
	}
	row, err := p.deps.Store.GetMemory(r.Context(), p.deps.Store.DB, id)
	if err != nil {
		return actionError(err)
	}
	to := strings.TrimSpace(r.PostForm.Get("to"))
	var newID int64
	var msg string
	if memory.Kind(row.Kind).Structured() {
		t, err := lesson.ParseTarget(to)
		if err != nil {
			return Errorf(http.StatusUnprocessableEntity, "%v", err)
		}
		moved, err := p.deps.Memories.MoveLesson(r.Context(), id, t, r.PostForm.Get("boundary"))
		if err != nil {
			return actionError(err)
		}
		newID, msg = moved.Lesson.ID, "lesson "+strconv.FormatInt(id, 10)+" moved to "+t.String()
	} else {
		ws, ok := libraryParam(to)
		if !ok {
			return Errorf(http.StatusUnprocessableEntity, "to: name the library to move it to: %s or a workspace's absolute path", globalLibrary)
		}
		moved, err := p.deps.Memories.MoveMemory(r.Context(), id, ws)
		if err != nil {
			return actionError(err)
		}
		newID, msg = moved.Memory.ID, "memory "+strconv.FormatInt(id, 10)+" "+moved.From.InvalidReason
	}
	setFlash(w, r, msg+": this is its new record")
	http.Redirect(w, r, memoryPath(newID), http.StatusSeeOther)
	return nil
}
