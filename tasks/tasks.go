// Package tasks is the task service (seed 000): opening a task freezes the
// lessons in force for its session as its decision environment, closing it
// records the outcome and hands it to whoever reflects on it (the
// reflect_task job, the agent, or both, per reflection.mode), and Apply
// carries a validated reflection out on the library, once per task. The
// HTTP API, the CLI and the reflect_task job call it; the rules it applies
// are learn/lesson's and learn/reflection's, the SQL the store's.
package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// Service opens, closes and reflects on tasks. Build one in main and share
// it.
type Service struct {
	store  *store.Store
	mem    *memories.Service
	ingest *ingest.Service
	client *engine.Client
	cfg    config.Reflection
}

// New makes a Service. mem reads the lessons in force; in stores the
// task_open and task_close events in the task's own transaction. Its clock
// is the store's.
func New(s *store.Store, mem *memories.Service, in *ingest.Service, cfg config.Reflection) *Service {
	return &Service{store: s, mem: mem, ingest: in, cfg: cfg}
}

// UseClient gives the service the River client Close enqueues reflect_task
// with (built after the service, as for ingest.UseClient).
func (s *Service) UseClient(c *engine.Client) { s.client = c }

// Errors the API maps to statuses.
var (
	// ErrNotFound: no such task (404).
	ErrNotFound = store.ErrNotFound
)

// ClosedError is a close of a task closed before (409): the first close
// stands.
type ClosedError = store.TaskClosedError

// AlreadyReflectedError is a second reflection on a task (409): the first
// one stands, and nothing of the second is stored.
type AlreadyReflectedError = store.TaskReflectedError

// FieldError is a bad request field (400), named as the request names it.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// ConflictError is a request the task's state refuses (409): reflecting on
// an open task, or as the agent on a task mull reflects on itself.
type ConflictError struct {
	TaskID string
	Reason string
}

func (e *ConflictError) Error() string { return "task " + e.TaskID + ": " + e.Reason }

// Get reads a task, or ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (store.Task, error) {
	t, err := s.store.GetTask(ctx, s.store.DB, id)
	if errors.Is(err, store.ErrNotFound) {
		return t, fmt.Errorf("no task %q: %w", id, ErrNotFound)
	}
	return t, err
}

// Detail is a task with its reflections, what `mull tasks show` and
// GET /v1/tasks/{id} answer.
type Detail struct {
	Task        store.Task
	Reflections []store.Reflection
}

// Show reads a task and its reflections, or ErrNotFound.
func (s *Service) Show(ctx context.Context, id string) (Detail, error) {
	t, err := s.Get(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	rs, err := s.store.ListReflections(ctx, s.store.DB, id)
	return Detail{Task: t, Reflections: rs}, err
}

// Filter narrows List.
type Filter struct {
	SessionID string
	Workspace string
	// Status is open, closed (any outcome), or one outcome; "" all.
	Status string
	Limit  int
}

// Statuses are what Filter.Status accepts besides "".
var Statuses = []string{store.TaskOpen, "closed", store.TaskSucceeded, store.TaskFailed, store.TaskAbandoned, store.TaskAborted}

// List lists tasks, oldest opened first. A status outside Statuses is a
// *FieldError.
func (s *Service) List(ctx context.Context, f Filter) ([]store.Task, error) {
	sf := store.TaskFilter{SessionID: f.SessionID, Workspace: f.Workspace, Limit: f.Limit}
	switch f.Status {
	case "":
	case "closed":
		sf.Closed = true
	case store.TaskOpen, store.TaskSucceeded, store.TaskFailed, store.TaskAbandoned, store.TaskAborted:
		sf.Status = f.Status
	default:
		return nil, &FieldError{Field: "status", Problem: fmt.Sprintf("%q is not one of open, closed, succeeded, failed, abandoned, aborted", f.Status)}
	}
	return s.store.ListTasks(ctx, s.store.DB, sf)
}
