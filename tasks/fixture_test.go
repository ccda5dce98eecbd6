package tasks_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/tasks"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

type clock struct{ now time.Time }

func (c *clock) add(d time.Duration) { c.now = c.now.Add(d) }

type fixture struct {
	t     *testing.T
	s     *store.Store
	svc   *tasks.Service
	mem   *memories.Service
	in    *ingest.Service
	clock *clock
	cfg   config.Config
}

// newFixture is a task service over s, its clock at t0, with cfg's
// reflection settings (edit them before the first call).
func newFixture(t *testing.T, s *store.Store, edit func(*config.Config)) *fixture {
	t.Helper()
	c := &clock{now: t0}
	s.SetClock(func() time.Time { return c.now })
	cfg := config.Default()
	if edit != nil {
		edit(&cfg)
	}
	mem := memories.New(s, cfg.Memory, cfg.Digest)
	in := ingest.New(s, ingest.Hooks{})
	return &fixture{t: t, s: s, svc: tasks.New(s, mem, in, cfg.Reflection), mem: mem, in: in, clock: c, cfg: cfg}
}

// lesson stores an active workspace lesson of /w.
func (f *fixture) lesson(problem string) int64 {
	f.t.Helper()
	m := memory.Memory{Workspace: "/w", Kind: memory.Lesson, Scope: memory.LessonWorkspace, Origin: memory.OriginPanel,
		Lesson: &memory.LessonFields{Problem: problem, Correction: "read the project's notes first, then handle " + problem,
			Confidence: memory.ConfidenceMedium, Boundary: "seen in this workspace"}}
	m, _, err := lesson.New(m, f.s.Now())
	if err != nil {
		f.t.Fatalf("lesson %q: %v", problem, err)
	}
	id, err := f.s.InsertMemory(context.Background(), f.s.DB, memories.ToRow(m))
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// closedTask stores task id of session sess in /w, closed with status, its
// environment holding the lessons env.
func (f *fixture) closedTask(id, sess, status string, env ...int64) store.Task {
	f.t.Helper()
	ctx := context.Background()
	var ms []memory.Memory
	for _, l := range env {
		r, err := f.s.GetMemory(ctx, f.s.DB, l)
		if err != nil {
			f.t.Fatal(err)
		}
		ms = append(ms, memories.FromRow(r))
	}
	snap, _ := json.Marshal(lesson.BuildSnapshot(ms, f.s.Now(), f.s.Now()))
	task := store.Task{ID: id, Kind: store.TaskKindTask, SessionID: sess, Workspace: "/w", Goal: "fix the build",
		Expected: "green CI", OpenedAt: f.s.Now(), Environment: string(snap)}
	if err := f.s.InsertTask(ctx, f.s.DB, task); err != nil {
		f.t.Fatal(err)
	}
	if status == store.TaskOpen {
		return task
	}
	closed, err := f.s.CloseTask(ctx, f.s.DB, id, store.TaskClose{Status: status, Result: "done", At: f.s.Now(), ReflectMode: "job"})
	if err != nil {
		f.t.Fatal(err)
	}
	return closed
}

// apply parses doc and applies it to task id as by, in its own
// transaction.
func (f *fixture) apply(id string, doc any, by string) (tasks.Applied, error) {
	f.t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		f.t.Fatal(err)
	}
	r, err := reflection.Parse(b, reflection.Options{Adversarial: f.cfg.Reflection.AdversarialReview})
	if err != nil {
		f.t.Fatalf("parse: %v", err)
	}
	var out tasks.Applied
	err = f.s.InTx(context.Background(), func(tx *sql.Tx) (err error) {
		out, err = f.svc.Apply(context.Background(), tx, id, r, by, 0)
		return err
	})
	return out, err
}

func (f *fixture) memory(id int64) memory.Memory {
	f.t.Helper()
	r, err := f.s.GetMemory(context.Background(), f.s.DB, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return memories.FromRow(r)
}

type m = map[string]any
type a = []any

func revise(target int64, evidence ...string) m {
	l := m{"relation": "revise", "target_id": target, "problem": "npm install fails on the lockfile",
		"correction": "use pnpm install whenever the lockfile is pnpm's, and never npm install", "scope": "workspace", "boundary": "this repo"}
	if evidence != nil {
		ev := a{}
		for _, e := range evidence {
			ev = append(ev, e)
		}
		l["evidence_task_ids"] = ev
	}
	return l
}

func doc(lessons ...m) m {
	ls := a{}
	for _, l := range lessons {
		ls = append(ls, l)
	}
	return m{"assessment": "the build failed on the lockfile", "lessons": ls}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
