package tasks

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/store"
)

// OpenRequest is a task_start: the session, its workspace, what the task
// is to achieve and what its result should look like.
type OpenRequest struct {
	SessionID      string `json:"session_id"`
	Workspace      string `json:"workspace"`
	Goal           string `json:"goal"`
	ExpectedResult string `json:"expected_result"`
}

// Opened is an opened task and its frozen decision environment.
type Opened struct {
	Task        store.Task
	Environment lesson.Snapshot
}

// Open opens a task, in one transaction: a task_open event stored through
// ingest (so a session mull has not seen yet exists from here on, as with
// its first event, and its seq advances), and the task row, open, with its
// window's start (open_seq, the session's last seq) and its decision
// environment: the snapshot of the lessons in force for the session
// (memories.LessonsInForce: what its published digest shows), taken now
// and committed at the digest's publication. The snapshot is written once;
// later lesson edits never change it. A bad field is a *FieldError naming
// it (events' own names: session_id, workspace, goal, expected_result).
func (s *Service) Open(ctx context.Context, r OpenRequest) (Opened, error) {
	r.Goal, r.ExpectedResult = strings.TrimSpace(r.Goal), strings.TrimSpace(r.ExpectedResult)
	switch {
	case strings.TrimSpace(r.SessionID) == "":
		return Opened{}, &FieldError{Field: "session_id", Problem: "required: the DSH session the task belongs to"}
	case r.Goal == "":
		return Opened{}, &FieldError{Field: "goal", Problem: "required: what the task is to achieve"}
	}
	id, err := newTaskID()
	if err != nil {
		return Opened{}, err
	}
	now := s.store.Now()
	payload, _ := json.Marshal(events.TaskOpenPayload{TaskID: id, Goal: r.Goal, ExpectedResult: r.ExpectedResult})
	ev := events.Event{ID: "mull:" + id + ":open", Type: events.TaskOpen, SessionID: r.SessionID, Workspace: r.Workspace,
		Time: now, Payload: payload}
	var out Opened
	err = s.store.InTx(ctx, func(tx *sql.Tx) error {
		if err := s.storeEvent(ctx, tx, ev); err != nil {
			return err
		}
		// A session's workspace is fixed by its first event: a task of it
		// reads and writes that workspace's lessons, whatever the request
		// says, or one session could write into another's prompt.
		sess, err := s.store.GetSessionIn(ctx, tx, r.SessionID)
		if err != nil {
			return err
		}
		if sess.Workspace != r.Workspace {
			return &FieldError{Field: "workspace", Problem: fmt.Sprintf("session %s belongs to workspace %q, not %q", r.SessionID, sess.Workspace, r.Workspace)}
		}
		seq, err := s.store.LastEventSeq(ctx, tx, r.SessionID)
		if err != nil {
			return err
		}
		ms, committed, err := s.mem.LessonsInForce(ctx, tx, r.Workspace, r.SessionID)
		if err != nil {
			return err
		}
		out.Environment = lesson.BuildSnapshot(ms, now, committed)
		env, err := json.Marshal(out.Environment)
		if err != nil {
			return err
		}
		out.Task = store.Task{ID: id, Kind: store.TaskKindTask, SessionID: r.SessionID, Workspace: r.Workspace, Goal: r.Goal,
			Expected: r.ExpectedResult, Status: store.TaskOpen, OpenedAt: now, OpenSeq: seq, Environment: string(env)}
		return s.store.InsertTask(ctx, tx, out.Task)
	})
	if err != nil {
		return Opened{}, err
	}
	return out, nil
}

// storeEvent stores one task event through ingest in tx; a bad field of
// it is the request's *FieldError.
func (s *Service) storeEvent(ctx context.Context, tx *sql.Tx, ev events.Event) error {
	_, err := s.ingest.IngestTx(ctx, tx, []events.Event{ev}, store.SourcePush)
	var fe *events.FieldError
	if errors.As(err, &fe) {
		return &FieldError{Field: strings.TrimPrefix(fe.Field, "payload."), Problem: fe.Problem}
	}
	return err
}

// newTaskID is "task-<uuid>", a random (version 4) UUID.
func newTaskID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return "task-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// Environment decodes a task's frozen decision environment.
func Environment(t store.Task) (lesson.Snapshot, error) {
	var snap lesson.Snapshot
	err := json.Unmarshal([]byte(t.Environment), &snap)
	return snap, err
}
