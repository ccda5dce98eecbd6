package api

import (
	"cmp"
	"errors"
	"net/http"
	"strconv"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// routesLessons mounts the agent's lessons_lookup (behind the API token,
// like the rest of what DSH's bridge calls) and the operator's lesson
// routes, the same as `mull lessons` (behind the admin token).
func (s *Server) routesLessons() {
	s.mux.Handle("GET /v1/lessons/{id}/lookup", s.apiAuth(s.withMemories(s.lookupLesson)))
	s.mux.Handle("GET /v1/admin/lessons", s.admin(s.withMemories(s.listLessons)))
	s.mux.Handle("POST /v1/admin/lessons", s.admin(s.withMemories(s.addLesson)))
	s.mux.Handle("GET /v1/admin/lessons/check", s.admin(s.withMemories(s.checkLessons)))
	s.mux.Handle("GET /v1/admin/lessons/stats", s.admin(s.withMemories(s.lessonStats)))
	s.mux.Handle("GET /v1/admin/lessons/deprecated", s.admin(s.withMemories(s.deprecatedLessons)))
	s.mux.Handle("POST /v1/admin/lessons/{id}/move", s.admin(s.withMemories(s.moveLesson)))
	s.mux.Handle("POST /v1/admin/lessons/{id}/remove", s.admin(s.withMemories(s.removeLesson)))
	s.mux.Handle("POST /v1/admin/lessons/{id}/deprecate", s.admin(s.withMemories(s.deprecateLesson)))
}

// lessonID reads the {id} path value as lesson.ParseLessonRef does ("L42"
// or "42"), and answers 400 itself when it is not one.
func lessonID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := lesson.ParseLessonRef(r.PathValue("id"))
	if err != nil {
		writeField(w, "id", err.Error())
		return 0, false
	}
	return id, true
}

// lookupLesson is the agent's lessons_lookup: {"text", "lesson"}; 404 for a
// lesson it may not read, with the reason.
func (s *Server) lookupLesson(w http.ResponseWriter, r *http.Request) {
	id, ok := lessonID(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	l, err := s.deps.Memories.LookupLesson(r.Context(), id, memories.Asker{Workspace: q.Get("workspace"), Session: q.Get("session")})
	var le *memories.LookupError
	switch {
	case errors.As(err, &le):
		writeError(w, http.StatusNotFound, le.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, "lookup: "+err.Error())
	default:
		writeJSON(w, http.StatusOK, l)
	}
}

// lessonError answers an operator route's error: 404 unknown, 400 a bad
// field or a memory that is not a lesson, 409 a transition the lifecycle
// refuses, 422 quarantined.
func lessonError(w http.ResponseWriter, what string, err error) {
	var fe *memory.FieldError
	var nl *memories.NotLessonError
	var ns *memories.NoSessionError
	var te *lesson.TransitionError
	var se *store.StateError
	var qe *memories.QuarantinedError
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, what+": "+err.Error())
	case errors.As(err, &fe):
		writeField(w, fe.Field, fe.Problem)
	case errors.As(err, &ns):
		writeField(w, ns.Field, ns.Error())
	case errors.As(err, &nl):
		writeError(w, http.StatusBadRequest, nl.Error())
	case errors.As(err, &te), errors.As(err, &se):
		writeError(w, http.StatusConflict, err.Error())
	case errors.As(err, &qe):
		writeJSON(w, http.StatusUnprocessableEntity, quarantinedBody{Error: qe.Error(), Quarantined: true, ID: qe.ID})
	default:
		writeError(w, http.StatusInternalServerError, what+": "+err.Error())
	}
}

// listLessons is `mull lessons list`: ?session=&workspace= name the viewer,
// all=true lists every lesson stored; the answer is a memories.LessonView
// (lessons in force now, the ids the published digest shows).
func (s *Server) listLessons(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	all, err := strconv.ParseBool(cmp.Or(q.Get("all"), "false"))
	if err != nil {
		writeField(w, "all", "want true or false, got "+strconv.Quote(q.Get("all")))
		return
	}
	v, err := s.deps.Memories.Lessons(r.Context(), memories.LessonQuery{Workspace: q.Get("workspace"), Session: q.Get("session"), All: all})
	if err != nil {
		lessonError(w, "list lessons", err)
		return
	}
	v.Lessons = nonNilList(v.Lessons)
	writeJSON(w, http.StatusOK, v)
}

func nonNilList[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// addLesson is `mull lessons add`: an operator's lesson, origin panel,
// through the trust gate. 201 with the lesson.
func (s *Server) addLesson(w http.ResponseWriter, r *http.Request) {
	var in memories.LessonWrite
	if !decodeBody(w, r, &in) {
		return
	}
	res, err := s.deps.Memories.AddLesson(r.Context(), in, memory.Provenance{Origin: memory.OriginPanel})
	if err != nil {
		lessonError(w, "add lesson", err)
		return
	}
	writeJSON(w, http.StatusCreated, res)
}

// checkLessons is `mull lessons check`: {"problems": [{id, rule, detail,
// line}]}; an empty list means the library is sound.
func (s *Server) checkLessons(w http.ResponseWriter, r *http.Request) {
	ps, err := s.deps.Memories.CheckLessons(r.Context())
	if err != nil {
		lessonError(w, "check lessons", err)
		return
	}
	type problem struct {
		ID     int64  `json:"id"`
		Rule   string `json:"rule"`
		Detail string `json:"detail"`
		Line   string `json:"line"`
	}
	out := make([]problem, len(ps))
	for i, p := range ps {
		out[i] = problem{ID: p.ID, Rule: p.Rule, Detail: p.Detail, Line: p.String()}
	}
	writeJSON(w, http.StatusOK, map[string]any{"problems": out})
}

// lessonStats is `mull lessons stats`: relation counts, refusals by check,
// reflections by job and agent (?workspace= narrows).
func (s *Server) lessonStats(w http.ResponseWriter, r *http.Request) {
	st, err := s.deps.Memories.LessonStats(r.Context(), r.URL.Query().Get("workspace"))
	if err != nil {
		lessonError(w, "lesson stats", err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) deprecatedLessons(w http.ResponseWriter, r *http.Request) {
	list, err := s.deps.Memories.DeprecatedLessons(r.Context(), r.URL.Query().Get("workspace"))
	if err != nil {
		lessonError(w, "deprecated lessons", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"lessons": nonNilList(list)})
}

type moveRequest struct {
	// To is global, session:S or workspace:W (lesson.ParseTarget).
	To       string `json:"to"`
	Boundary string `json:"boundary,omitempty"`
}

// moveLesson is `mull lessons move`: a promotion, 201 with the new lesson
// and the one it covers.
func (s *Server) moveLesson(w http.ResponseWriter, r *http.Request) {
	id, ok := lessonID(w, r)
	if !ok {
		return
	}
	var in moveRequest
	if !decodeBody(w, r, &in) {
		return
	}
	t, err := lesson.ParseTarget(in.To)
	if err != nil {
		writeField(w, "to", err.Error())
		return
	}
	mv, err := s.deps.Memories.MoveLesson(r.Context(), id, t, in.Boundary)
	if err != nil {
		lessonError(w, "move lesson", err)
		return
	}
	writeJSON(w, http.StatusCreated, mv)
}

type removeRequest struct {
	// Yes confirms; without it the answer is a preview and nothing changes.
	Yes    bool   `json:"yes,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// removeLesson is `mull lessons remove`: a preview (removed false) unless
// yes, then the tombstone.
func (s *Server) removeLesson(w http.ResponseWriter, r *http.Request) {
	id, ok := lessonID(w, r)
	if !ok {
		return
	}
	var in removeRequest
	if !decodeBody(w, r, &in) {
		return
	}
	rm, err := s.deps.Memories.RemoveLesson(r.Context(), id, in.Reason, in.Yes)
	if err != nil {
		lessonError(w, "remove lesson", err)
		return
	}
	rm.Links = nonNilList(rm.Links)
	rm.PromotedTo = nonNilList(rm.PromotedTo)
	writeJSON(w, http.StatusOK, rm)
}

type deprecateRequest struct {
	Reason string `json:"reason"`
}

func (s *Server) deprecateLesson(w http.ResponseWriter, r *http.Request) {
	id, ok := lessonID(w, r)
	if !ok {
		return
	}
	var in deprecateRequest
	if !decodeBody(w, r, &in) {
		return
	}
	m, err := s.deps.Memories.DeprecateLesson(r.Context(), id, in.Reason)
	if err != nil {
		lessonError(w, "deprecate lesson", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"lesson": m})
}
