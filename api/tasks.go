package api

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/learn/trust"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/tasks"
)

// routesTasks mounts the task tools' routes (the bridge's task_start,
// task_end, task_reflect), behind the API token like /v1/events, and the
// admin's task list.
func (s *Server) routesTasks() {
	s.mux.Handle("POST /v1/tasks", s.apiAuth(s.withTasks(s.openTask)))
	s.mux.Handle("GET /v1/tasks/{id}", s.apiAuth(s.withTasks(s.showTask)))
	s.mux.Handle("POST /v1/tasks/{id}/end", s.apiAuth(s.withTasks(s.endTask)))
	s.mux.Handle("POST /v1/tasks/{id}/reflect", s.apiAuth(s.withTasks(s.reflectTask)))
	s.mux.Handle("GET /v1/admin/tasks", s.admin(s.withTasks(s.listTasks)))
}

func (s *Server) withTasks(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.deps.Tasks == nil {
			writeError(w, http.StatusServiceUnavailable, "tasks are not configured on this server")
			return
		}
		h(w, r)
	}
}

// TaskEnvironment is a task's decision environment in short: how many
// lessons were in force when it opened, whether only the first 12 are in
// full, and when it was taken.
type TaskEnvironment struct {
	Count       int       `json:"count"`
	Truncated   bool      `json:"truncated"`
	TakenAt     time.Time `json:"taken_at"`
	CommittedAt time.Time `json:"committed_at"`
	IDs         []int64   `json:"ids"`
}

// TaskView is a task as the API (and mull tasks --json) shows it.
type TaskView struct {
	ID           string          `json:"id"`
	Kind         string          `json:"kind"`
	SessionID    string          `json:"session_id"`
	Workspace    string          `json:"workspace"`
	Goal         string          `json:"goal"`
	Expected     string          `json:"expected_result"`
	Status       string          `json:"status"`
	Result       string          `json:"result,omitempty"`
	OpenedAt     time.Time       `json:"opened_at"`
	ClosedAt     *time.Time      `json:"closed_at,omitempty"`
	OpenSeq      int64           `json:"open_seq"`
	CloseSeq     int64           `json:"close_seq,omitempty"`
	Environment  TaskEnvironment `json:"environment"`
	ReflectMode  string          `json:"reflect_mode,omitempty"`
	ReflectedBy  string          `json:"reflected_by,omitempty"`
	ReflectedAt  *time.Time      `json:"reflected_at,omitempty"`
	ReflectJobID int64           `json:"reflect_job_id,omitempty"`
}

// ViewTask is t as TaskView.
func ViewTask(t store.Task) TaskView {
	v := TaskView{ID: t.ID, Kind: t.Kind, SessionID: t.SessionID, Workspace: t.Workspace, Goal: t.Goal, Expected: t.Expected,
		Status: t.Status, Result: t.Result, OpenedAt: t.OpenedAt, OpenSeq: t.OpenSeq, CloseSeq: t.CloseSeq,
		ReflectMode: t.ReflectMode, ReflectedBy: t.ReflectedBy, ReflectJobID: t.ReflectJobID}
	if !t.ClosedAt.IsZero() {
		v.ClosedAt = &t.ClosedAt
	}
	if !t.ReflectedAt.IsZero() {
		v.ReflectedAt = &t.ReflectedAt
	}
	if snap, err := tasks.Environment(t); err == nil {
		v.Environment = TaskEnvironment{Count: snap.Count, Truncated: snap.Truncated, TakenAt: snap.TakenAt,
			CommittedAt: snap.CommittedAt, IDs: snap.IDs()}
	}
	if v.Environment.IDs == nil {
		v.Environment.IDs = []int64{}
	}
	return v
}

// writeTaskError answers the task service's typed errors: 400 a bad field,
// 404 an unknown task, 409 a task whose state refuses the call (the body
// names the state), 422 a reflection the schema refuses (naming the JSON
// path), 500 anything else.
func writeTaskError(w http.ResponseWriter, err error) {
	var fe *tasks.FieldError
	var rfe *reflection.FieldError
	var closed *tasks.ClosedError
	var reflected *tasks.AlreadyReflectedError
	var conflict *tasks.ConflictError
	switch {
	case errors.As(err, &fe):
		writeField(w, fe.Field, fe.Problem)
	case errors.As(err, &rfe):
		writeJSON(w, http.StatusUnprocessableEntity, fieldBody{Error: rfe.Error(), Field: rfe.Field})
	case errors.Is(err, tasks.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.As(err, &closed), errors.As(err, &reflected), errors.As(err, &conflict):
		writeError(w, http.StatusConflict, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "tasks: "+err.Error())
	}
}

// openTask is POST /v1/tasks (task_start): 201 with the task and its
// environment's count.
func (s *Server) openTask(w http.ResponseWriter, r *http.Request) {
	var in tasks.OpenRequest
	if !decodeBody(w, r, &in) {
		return
	}
	o, err := s.deps.Tasks.Open(r.Context(), in)
	if err != nil {
		writeTaskError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"task": ViewTask(o.Task)})
}

// showTask is GET /v1/tasks/{id}: the task and its reflections.
func (s *Server) showTask(w http.ResponseWriter, r *http.Request) {
	d, err := s.deps.Tasks.Show(r.Context(), r.PathValue("id"))
	if err != nil {
		writeTaskError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"task": ViewTask(d.Task), "reflections": ViewReflections(d.Reflections)})
}

// endRequest is POST /v1/tasks/{id}/end's body.
type endRequest struct {
	Status string `json:"status"`
	Result string `json:"result"`
}

// endReflection is who reflects on a closed task: the job's id, the
// agent's material, or both.
type endReflection struct {
	Mode     string `json:"mode"`
	JobID    int64  `json:"job_id,omitempty"`
	Material string `json:"material,omitempty"`
}

// endTask is POST /v1/tasks/{id}/end (task_end).
func (s *Server) endTask(w http.ResponseWriter, r *http.Request) {
	var in endRequest
	if !decodeBody(w, r, &in) {
		return
	}
	c, err := s.deps.Tasks.Close(r.Context(), r.PathValue("id"), in.Status, in.Result)
	if err != nil {
		writeTaskError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"task": ViewTask(c.Task),
		"reflection": endReflection{Mode: c.Mode, JobID: c.JobID, Material: c.Material}})
}

// reflectTask is POST /v1/tasks/{id}/reflect (task_reflect): the body is
// the reflection's JSON, validated by learn/reflection; a refusal is a 422
// naming its JSON path.
func (s *Server) reflectTask(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, reflection.MaxBytes))
	switch {
	case isTooBig(err):
		writeError(w, http.StatusRequestEntityTooLarge, "reflection over "+strconv.Itoa(reflection.MaxBytes)+" bytes")
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	// Strings no store keeps faithfully: 400 naming their JSON path, as on
	// every route, before the schema reads it.
	if !checkJSONBody(w, body) {
		return
	}
	out, err := s.deps.Tasks.Reflect(r.Context(), r.PathValue("id"), body)
	if err != nil {
		writeTaskError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// listTasks is GET /v1/admin/tasks?session=&workspace=&status=&limit=.
func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := tasks.Filter{SessionID: q.Get("session"), Workspace: q.Get("workspace"), Status: q.Get("status")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeField(w, "limit", "must be a whole number between 1 and 1000")
			return
		}
		f.Limit = n
	}
	ts, err := s.deps.Tasks.List(r.Context(), f)
	if err != nil {
		writeTaskError(w, err)
		return
	}
	out := make([]TaskView, 0, len(ts))
	for _, t := range ts {
		out = append(out, ViewTask(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": out})
}

// ReflectionView is one reflection on a task with its items, its
// assessment through the render-time gate.
type ReflectionView struct {
	ID              int64      `json:"id"`
	By              string     `json:"by"`
	JobID           int64      `json:"job_id,omitempty"`
	Assessment      string     `json:"assessment"`
	Verdict         string     `json:"verdict,omitempty"`
	LessonsRecorded int        `json:"lessons_recorded"`
	RecordedAt      time.Time  `json:"recorded_at"`
	Items           []ItemView `json:"items"`
}

// ItemView is what became of one lesson of a reflection.
type ItemView struct {
	Index    int    `json:"index"`
	Relation string `json:"relation"`
	TargetID int64  `json:"target_id,omitempty"`
	ID       int64  `json:"id,omitempty"`
	Refused  string `json:"refused,omitempty"`
}

// ViewReflections is rs as ReflectionViews.
func ViewReflections(rs []store.Reflection) []ReflectionView {
	out := make([]ReflectionView, 0, len(rs))
	for _, r := range rs {
		assessment, ok := trust.Line(r.Assessment)
		if !ok {
			assessment = "(withheld by the trust gate)"
		}
		v := ReflectionView{ID: r.ID, By: r.By, JobID: r.JobID, Assessment: assessment, Verdict: r.Verdict,
			LessonsRecorded: r.LessonsRecorded, RecordedAt: r.RecordedAt, Items: []ItemView{}}
		for _, it := range r.Items {
			iv := ItemView{Index: it.Index, Relation: it.Relation, TargetID: it.TargetID, ID: it.MemoryID}
			if it.RefusedCheck != "" {
				iv.Refused = it.RefusedCheck + ": " + it.RefusedReason
			}
			v.Items = append(v.Items, iv)
		}
		out = append(out, v)
	}
	return out
}
