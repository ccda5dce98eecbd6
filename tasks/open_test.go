package tasks_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/jobs/reflecttask"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/tasks"
)

// insertClient is an insert-only River client on s; fail makes every
// insert fail.
func insertClient(t *testing.T, s *store.Store, fail bool) *engine.Client {
	t.Helper()
	cfg := &river.Config{}
	if fail {
		cfg.JobInsertMiddleware = []rivertype.JobInsertMiddleware{&failingInsert{}}
	}
	c, err := river.NewClient(s.Driver(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type failingInsert struct{ river.MiddlewareDefaults }

func (*failingInsert) InsertMany(context.Context, []*rivertype.JobInsertParams,
	func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	return nil, errors.New("the queue is down")
}

func (f *fixture) open(sess, goal string) tasks.Opened {
	f.t.Helper()
	o, err := f.svc.Open(context.Background(), tasks.OpenRequest{SessionID: sess, Workspace: "/w", Goal: goal, ExpectedResult: "it works"})
	if err != nil {
		f.t.Fatalf("open: %v", err)
	}
	return o
}

// Opening a task freezes the lessons in force for its session as the
// digest shows them; later edits of the library never change it.
func TestOpenFreezesTheEnvironment(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s, nil)
		l1, l2 := f.lesson("npm install fails"), f.lesson("go vet is slow")
		f.clock.add(time.Minute)
		d, err := f.mem.Digest(ctx, "/w")
		if err != nil {
			t.Fatal(err)
		}
		f.clock.add(time.Minute)
		o := f.open("s1", "fix the build")
		if !strings.HasPrefix(o.Task.ID, "task-") || len(o.Task.ID) != len("task-")+36 || o.Task.OpenSeq != 1 {
			t.Fatalf("task %+v", o.Task)
		}
		env := o.Environment
		if env.Count != 2 || !slices.Equal(slices.Sorted(slices.Values(env.IDs())), []int64{l1, l2}) ||
			!env.CommittedAt.Equal(d.PublishedAt) || !env.TakenAt.Equal(f.clock.now) {
			t.Fatalf("environment %+v (published %v)", env, d.PublishedAt)
		}
		sess, err := s.GetSession(ctx, "s1")
		if err != nil || sess.Workspace != "/w" || sess.Events != 1 {
			t.Fatalf("the session the task_open made: %+v %v", sess, err)
		}
		stored, _ := f.svc.Get(ctx, o.Task.ID)
		// The library changes and a new digest is published: the task's
		// environment stays as it was.
		if err := s.SetMemoryState(ctx, s.DB, l1, store.StateDeprecated, f.clock.now, "test", 0); err != nil {
			t.Fatal(err)
		}
		f.lesson("make is flaky")
		f.clock.add(time.Hour)
		if _, err := f.mem.Digest(ctx, "/w"); err != nil {
			t.Fatal(err)
		}
		again, _ := f.svc.Get(ctx, o.Task.ID)
		if again.Environment != stored.Environment {
			t.Fatalf("environment changed:\n%s\nwas\n%s", again.Environment, stored.Environment)
		}
		// The next task sees the new digest's.
		if next := f.open("s1", "fix it again"); next.Environment.Count != 2 || slices.Contains(next.Environment.IDs(), l1) {
			t.Fatalf("next task's environment %+v", next.Environment)
		}
		for _, r := range []tasks.OpenRequest{{Workspace: "/w", Goal: "g"}, {SessionID: "s1", Workspace: "/w", Goal: " "},
			{SessionID: "s1", Workspace: "relative", Goal: "g"}} {
			var fe *tasks.FieldError
			if _, err := f.svc.Open(ctx, r); !errors.As(err, &fe) {
				t.Errorf("%+v: %v, want a field error", r, err)
			}
		}
	})
}

// Closing a task enqueues reflect_task in the same transaction: when the
// insert fails, the task stays open and no task_close is stored.
func TestCloseEnqueuesReflectTask(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s, nil)
		o := f.open("s1", "fix the build")
		f.svc.UseClient(insertClient(t, s, true))
		if _, err := f.svc.Close(ctx, o.Task.ID, "failed", "CI still red"); err == nil || !strings.Contains(err.Error(), "the queue is down") {
			t.Fatalf("close with a failing insert: %v", err)
		}
		if got, _ := f.svc.Get(ctx, o.Task.ID); got.Status != store.TaskOpen || !got.ClosedAt.IsZero() {
			t.Fatalf("a failed close stored: %+v", got)
		}
		if seq, _ := s.LastEventSeq(ctx, s.DB, "s1"); seq != 1 {
			t.Fatalf("a failed close stored its event: seq %d", seq)
		}
		client := insertClient(t, s, false)
		f.svc.UseClient(client)
		c, err := f.svc.Close(ctx, o.Task.ID, "failed", "CI still red")
		if err != nil {
			t.Fatal(err)
		}
		if c.Mode != "job" || c.JobID == 0 || c.Material != "" || c.Task.Status != "failed" || c.Task.CloseSeq != 2 ||
			c.Task.ReflectJobID != c.JobID || c.Task.EnvironmentIDs == nil {
			t.Fatalf("closed %+v", c)
		}
		job, err := client.JobGet(ctx, c.JobID)
		if err != nil || job.Kind != (reflecttask.Args{}).Kind() || !strings.Contains(string(job.EncodedArgs), o.Task.ID) {
			t.Fatalf("job %+v %v", job, err)
		}
		var closed *tasks.ClosedError
		if _, err := f.svc.Close(ctx, o.Task.ID, "succeeded", ""); !errors.As(err, &closed) || closed.Status != "failed" {
			t.Fatalf("second close: %v", err)
		}
		if _, err := f.svc.Close(ctx, "task-nope", "failed", ""); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("unknown: %v", err)
		}
		var fe *tasks.FieldError
		if _, err := f.svc.Close(ctx, o.Task.ID, "done", ""); !errors.As(err, &fe) || fe.Field != "status" {
			t.Fatalf("bad status: %v", err)
		}
	})
}

// In agent mode the close answers with the material and enqueues nothing;
// the agent's reflection goes through Parse and Apply; in job mode the
// agent is refused.
func TestAgentModeReflect(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s, func(c *config.Config) { c.Reflection.Mode = "agent" })
		target := f.lesson("npm install fails")
		if _, err := f.mem.Digest(ctx, "/w"); err != nil {
			t.Fatal(err)
		}
		o := f.open("s1", "fix the lockfile")
		c, err := f.svc.Close(ctx, o.Task.ID, "failed", "npm still fails")
		if err != nil {
			t.Fatal(err)
		}
		if c.Mode != "agent" || c.JobID != 0 || !strings.Contains(c.Material, "fix the lockfile") ||
			!strings.Contains(c.Material, "DECISION ENVIRONMENT") || !strings.Contains(c.Material, "npm install fails") {
			t.Fatalf("closed %+v", c)
		}
		_, err = f.svc.Reflect(ctx, o.Task.ID, []byte(`{"assessment":"x","lessons":[{"relation":"repeat"}]}`))
		if !strings.Contains(err.Error(), "lessons[0].target_id") {
			t.Fatalf("bad body: %v", err)
		}
		// The agent writes its session's and its workspace's lessons, not
		// every workspace's.
		_, err = f.svc.Reflect(ctx, o.Task.ID, []byte(`{"assessment":"x","lessons":[{"relation":"new","scope":"global",
			"problem":"npm install fails","correction":"use pnpm install in every repository","boundary":"all repos"}]}`))
		if err == nil || !strings.Contains(err.Error(), "lessons[0].scope") {
			t.Fatalf("global scope: %v", err)
		}
		_, err = f.svc.Reflect(ctx, o.Task.ID, []byte(`{"task_id":"task-other","assessment":"x","lessons":[]}`))
		if err == nil || !strings.Contains(err.Error(), "task_id") {
			t.Fatalf("other task's id: %v", err)
		}
		got, err := f.svc.Reflect(ctx, o.Task.ID, []byte(`{"assessment":"the lockfile is pnpm's","lessons":[
			{"relation":"repeat","target_id":`+itoa(target)+`},
			{"relation":"new","kind":"failure","problem":"npm install rewrote the lockfile","avoid":"npm install in a pnpm repo"}]}`))
		if err != nil || got.LessonsRecorded != 1 || got.Results[0].ID != target {
			t.Fatalf("reflect: %+v %v", got, err)
		}
		if m := f.memory(target); m.Uses != 1 {
			t.Fatalf("repeat did not add a use: %+v", m)
		}
		// Its row in the use log: a reflection of the task's session, no
		// job (the agent reflected).
		if us, err := s.MemoryUses(ctx, s.DB, store.MemoryUseFilter{MemoryID: target}); err != nil || len(us) != 1 ||
			us[0].Cause != store.UseReflection || us[0].SessionID != "s1" || us[0].JobID != 0 || us[0].Workspace != "/w" {
			t.Fatalf("use log of the repeated lesson: %+v, %v", us, err)
		}
		if m := f.memory(got.Results[1].ID); m.Kind != memory.Failure || m.ScopeSession != "s1" {
			t.Fatalf("new failure %+v", m)
		}
		var already *tasks.AlreadyReflectedError
		if _, err := f.svc.Reflect(ctx, o.Task.ID, []byte(`{"assessment":"x","lessons":[]}`)); !errors.As(err, &already) {
			t.Fatalf("second reflect: %v", err)
		}
		// Job mode: the agent is told mull reflects itself.
		f.svc = tasks.New(s, f.mem, f.in, config.Default().Reflection)
		f.svc.UseClient(insertClient(t, s, false))
		o2 := f.open("s1", "another")
		if _, err := f.svc.Close(ctx, o2.Task.ID, "succeeded", "ok"); err != nil {
			t.Fatal(err)
		}
		var conflict *tasks.ConflictError
		if _, err := f.svc.Reflect(ctx, o2.Task.ID, []byte(`{"assessment":"x","lessons":[]}`)); !errors.As(err, &conflict) ||
			!strings.Contains(err.Error(), "reflection.mode is job") {
			t.Fatalf("job mode: %v", err)
		}
	})
}

// A task belongs to its session's workspace: a request naming another one
// is refused, so a session cannot write into another workspace's prompt.
func TestOpenKeepsTheSessionsWorkspace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, nil)
		f.open("s1", "first task") // the session is /w's
		var fe *tasks.FieldError
		_, err := f.svc.Open(context.Background(), tasks.OpenRequest{SessionID: "s1", Workspace: "/other", Goal: "g", ExpectedResult: "e"})
		if !errors.As(err, &fe) || fe.Field != "workspace" || !strings.Contains(fe.Problem, `"/w"`) {
			t.Fatalf("open in another workspace: %v, want a workspace field error naming /w", err)
		}
		if list, err := f.svc.List(context.Background(), tasks.Filter{SessionID: "s1"}); err != nil || len(list) != 1 {
			t.Fatalf("tasks of s1: %d, %v; want only the first", len(list), err)
		}
	})
}
