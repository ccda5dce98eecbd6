package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

var taskT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// env is a snapshot's JSON with detailed and omitted lesson ids (the shape
// lesson.Snapshot marshals to).
func env(detailed []int64, omitted ...int64) string {
	var ls, os []string
	for _, id := range detailed {
		ls = append(ls, fmt.Sprintf(`{"id":%d,"kind":"lesson","scope":"global","confidence":"high","problem":"p%d"}`, id, id))
	}
	for _, id := range omitted {
		os = append(os, fmt.Sprintf(`{"id":%d,"problem":"p%d"}`, id, id))
	}
	return fmt.Sprintf(`{"taken_at":"2026-12-01T09:00:00Z","committed_at":"2026-12-01T08:00:00Z","count":%d,"truncated":%t,"lessons":[%s],"omitted":[%s]}`,
		len(ls)+len(os), len(os) > 0, strings.Join(ls, ","), strings.Join(os, ","))
}

func newTask(id, session string, opened time.Time, environment string) store.Task {
	return store.Task{ID: id, Kind: store.TaskKindTask, SessionID: session, Workspace: "/w", Goal: "goal of " + id,
		Expected: "tests pass", OpenedAt: opened, OpenSeq: 3, Environment: environment}
}

func insertTask(t *testing.T, s *store.Store, task store.Task) {
	t.Helper()
	if err := s.InsertTask(context.Background(), s.DB, task); err != nil {
		t.Fatalf("insert task %s: %v", task.ID, err)
	}
}

func closeTask(t *testing.T, s *store.Store, id, status string, at time.Time) store.Task {
	t.Helper()
	task, err := s.CloseTask(context.Background(), s.DB, id, store.TaskClose{Status: status, Result: "result of " + id,
		At: at, CloseSeq: 9, ReflectMode: "job"})
	if err != nil {
		t.Fatalf("close task %s: %v", id, err)
	}
	return task
}

func TestTaskLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		environment := env([]int64{7, 3}, 11)
		insertTask(t, s, newTask("task-1", "session-1", taskT0, environment))

		got, err := s.GetTask(ctx, s.DB, "task-1")
		if err != nil || got.Status != store.TaskOpen || got.Goal != "goal of task-1" || got.Expected != "tests pass" ||
			!got.OpenedAt.Equal(taskT0) || got.OpenSeq != 3 || got.Environment != environment || got.EnvironmentIDs != nil ||
			!got.ClosedAt.IsZero() || got.Kind != store.TaskKindTask || got.Workspace != "/w" {
			t.Fatalf("open task %+v, %v", got, err)
		}
		if err := s.InsertTask(ctx, s.DB, newTask("task-1", "session-1", taskT0, env(nil))); !errors.Is(err, store.ErrTaskExists) {
			t.Fatalf("second insert: %v, want ErrTaskExists", err)
		}
		if _, err := s.GetTask(ctx, s.DB, "task-nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown task: %v", err)
		}
		if err := s.MarkTaskReflected(ctx, s.DB, "task-1", store.ReflectedByJob, taskT0); err == nil || !strings.Contains(err.Error(), "still open") {
			t.Fatalf("reflect an open task: %v", err)
		}

		closed := closeTask(t, s, "task-1", store.TaskFailed, taskT0.Add(time.Hour))
		got, _ = s.GetTask(ctx, s.DB, "task-1")
		if got.Status != store.TaskFailed || got.Result != "result of task-1" || !got.ClosedAt.Equal(taskT0.Add(time.Hour)) ||
			got.CloseSeq != 9 || !slices.Equal(got.EnvironmentIDs, []int64{7, 3, 11}) || got.ReflectMode != "job" ||
			got.Environment != environment {
			t.Fatalf("closed task %+v", got)
		}
		if closed.Status != got.Status || !slices.Equal(closed.EnvironmentIDs, got.EnvironmentIDs) || !closed.ClosedAt.Equal(got.ClosedAt) {
			t.Fatalf("CloseTask returned %+v; stored %+v", closed, got)
		}

		// Close twice: refused, the first close stands.
		_, err = s.CloseTask(ctx, s.DB, "task-1", store.TaskClose{Status: store.TaskSucceeded, At: taskT0.Add(2 * time.Hour), CloseSeq: 10})
		var ce *store.TaskClosedError
		if !errors.As(err, &ce) || ce.Status != store.TaskFailed || !ce.ClosedAt.Equal(taskT0.Add(time.Hour)) || !strings.Contains(err.Error(), "already closed (failed") {
			t.Fatalf("second close: %v", err)
		}
		if again, _ := s.GetTask(ctx, s.DB, "task-1"); again.Status != store.TaskFailed || again.CloseSeq != 9 {
			t.Fatalf("after a refused close: %+v", again)
		}
		if _, err := s.CloseTask(ctx, s.DB, "task-nope", store.TaskClose{Status: store.TaskFailed, At: taskT0}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("close unknown: %v", err)
		}

		// Reflected twice: refused, the first stands.
		if err := s.SetTaskReflectJob(ctx, s.DB, "task-1", 77); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkTaskReflected(ctx, s.DB, "task-1", store.ReflectedByAgent, taskT0.Add(90*time.Minute)); err != nil {
			t.Fatal(err)
		}
		err = s.MarkTaskReflected(ctx, s.DB, "task-1", store.ReflectedByJob, taskT0.Add(2*time.Hour))
		var re *store.TaskReflectedError
		if !errors.As(err, &re) || re.By != store.ReflectedByAgent || !re.At.Equal(taskT0.Add(90*time.Minute)) {
			t.Fatalf("second reflect: %v", err)
		}
		got, _ = s.GetTask(ctx, s.DB, "task-1")
		if got.ReflectedBy != store.ReflectedByAgent || !got.ReflectedAt.Equal(taskT0.Add(90*time.Minute)) || got.ReflectJobID != 77 {
			t.Fatalf("reflected task %+v", got)
		}
		if err := s.MarkTaskReflected(ctx, s.DB, "task-nope", store.ReflectedByJob, taskT0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("reflect unknown: %v", err)
		}
		if err := s.MarkTaskReflected(ctx, s.DB, "task-1", "panel", taskT0); err == nil || !strings.Contains(err.Error(), `"panel"`) {
			t.Fatalf("reflect by panel: %v", err)
		}
	})
}

// The environment is written once: nothing the store does changes it, and
// the database refuses a statement that tries, on either table.
func TestTaskEnvironmentIsImmutable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		environment := env([]int64{5}, 6)
		insertTask(t, s, newTask("task-1", "session-1", taskT0, environment))
		closeTask(t, s, "task-1", store.TaskSucceeded, taskT0.Add(time.Minute))
		if err := s.MarkTaskReflected(ctx, s.DB, "task-1", store.ReflectedByJob, taskT0.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`update tasks set environment = '{"count":0,"lessons":[],"omitted":[]}' where id = 'task-1'`,
			`update task_lessons set detailed = false where task_id = 'task-1'`,
			`delete from task_lessons where task_id = 'task-1'`,
		} {
			if _, err := s.DB.ExecContext(ctx, q); err == nil || !strings.Contains(err.Error(), "written once") {
				t.Errorf("%s: %v; want the database to refuse it", q, err)
			}
		}
		// Other columns of the row still update (the close did).
		if _, err := s.DB.ExecContext(ctx, `update tasks set result = 'x' where id = 'task-1'`); err != nil {
			t.Fatalf("a column other than environment: %v", err)
		}
		got, _ := s.GetTask(ctx, s.DB, "task-1")
		if got.Environment != environment {
			t.Fatalf("environment changed: %s", got.Environment)
		}
		if p, err := s.PrecedentCounts(ctx, s.DB, []int64{5, 6}); err != nil || p[5].Verified != 1 || p[6].Verified != 1 {
			t.Fatalf("task_lessons after refused changes: %+v, %v", p, err)
		}
	})
}

func TestInsertTaskRefusesBadInput(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		good := newTask("task-x", "session-1", taskT0, env([]int64{1}))
		for _, tt := range []struct {
			name string
			edit func(*store.Task)
			want string
		}{
			{"no id", func(t *store.Task) { t.ID = " " }, "id is required"},
			{"bad kind", func(t *store.Task) { t.Kind = "chore" }, `kind "chore"`},
			{"no session", func(t *store.Task) { t.SessionID = "" }, "session_id is required"},
			{"no goal", func(t *store.Task) { t.Goal = "" }, "goal is required"},
			{"closed", func(t *store.Task) { t.Status = store.TaskSucceeded }, "stored open"},
			{"no time", func(t *store.Task) { t.OpenedAt = time.Time{} }, "opened_at is required"},
			{"not json", func(t *store.Task) { t.Environment = "lessons: 1" }, "not a snapshot's JSON"},
			{"no count", func(t *store.Task) { t.Environment = `{"lessons":[]}` }, "no count"},
			{"count off", func(t *store.Task) { t.Environment = `{"count":2,"lessons":[{"id":1}],"omitted":[]}` }, "count 2 does not match its 1"},
			{"twice", func(t *store.Task) { t.Environment = `{"count":2,"lessons":[{"id":1}],"omitted":[{"id":1}]}` }, "lesson 1 twice"},
			{"zero id", func(t *store.Task) { t.Environment = `{"count":1,"lessons":[{"id":0}],"omitted":[]}` }, "id 0"},
		} {
			task := good
			tt.edit(&task)
			if err := s.InsertTask(ctx, s.DB, task); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: %v; want %q", tt.name, err, tt.want)
			}
		}
		if ts, _ := s.ListTasks(ctx, s.DB, store.TaskFilter{}); len(ts) != 0 {
			t.Fatalf("a refused task was stored: %+v", ts)
		}
		insertTask(t, s, good)
		for _, c := range []store.TaskClose{
			{Status: "done", At: taskT0},
			{Status: store.TaskFailed},
			{Status: store.TaskFailed, At: taskT0, ReflectMode: "later"},
			{Status: store.TaskFailed, At: taskT0, CloseSeq: 2}, // before open_seq 3
		} {
			if _, err := s.CloseTask(ctx, s.DB, "task-x", c); err == nil {
				t.Errorf("close %+v accepted", c)
			}
		}
		if got, _ := s.GetTask(ctx, s.DB, "task-x"); got.Status != store.TaskOpen {
			t.Fatalf("a refused close changed the task: %+v", got)
		}
	})
}

func TestListTasks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		insertTask(t, s, newTask("task-a1", "session-a", taskT0, env(nil)))
		insertTask(t, s, newTask("task-b1", "session-b", taskT0.Add(time.Minute), env(nil)))
		insertTask(t, s, newTask("task-a2", "session-a", taskT0.Add(2*time.Minute), env(nil)))
		turn := newTask("turn-session-a-4", "session-a", taskT0.Add(3*time.Minute), env(nil))
		turn.Kind = store.TaskKindTurn
		insertTask(t, s, turn)
		closeTask(t, s, "task-a1", store.TaskSucceeded, taskT0.Add(time.Hour))
		closeTask(t, s, "task-b1", store.TaskAborted, taskT0.Add(time.Hour))
		if err := s.MarkTaskReflected(ctx, s.DB, "task-b1", store.ReflectedByJob, taskT0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		ids := func(f store.TaskFilter) string {
			ts, err := s.ListTasks(ctx, s.DB, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, t := range ts {
				out = append(out, t.ID)
			}
			return strings.Join(out, " ")
		}
		for _, tt := range []struct {
			f    store.TaskFilter
			want string
		}{
			{store.TaskFilter{}, "task-a1 task-b1 task-a2 turn-session-a-4"},
			{store.TaskFilter{SessionID: "session-a"}, "task-a1 task-a2 turn-session-a-4"},
			{store.TaskFilter{SessionID: "session-a", Status: store.TaskOpen}, "task-a2 turn-session-a-4"},
			{store.TaskFilter{Status: store.TaskAborted}, "task-b1"},
			{store.TaskFilter{Unreflected: true}, "task-a1"},
			{store.TaskFilter{Workspace: "/other"}, ""},
			{store.TaskFilter{Limit: 1}, "task-a1"},
		} {
			if got := ids(tt.f); got != tt.want {
				t.Errorf("%+v: %q; want %q", tt.f, got, tt.want)
			}
		}
	})
}

// The precedent fixture tells the three counts apart: lesson 1 is in two
// succeeded tasks, one failed, one abandoned, one aborted and one open
// (verified 2, counter 1, exposures 5); lesson 2, omitted (not detailed),
// in one failed and the open one (0, 1, 1); lesson 3 only in the open task
// (no entry); lesson 4 in none.
func TestPrecedentCounts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		tasks := []struct {
			id, status string
			env        string
		}{
			{"task-s1", store.TaskSucceeded, env([]int64{1})},
			{"task-s2", store.TaskSucceeded, env([]int64{1})},
			{"task-f1", store.TaskFailed, env([]int64{1}, 2)},
			{"task-ab", store.TaskAbandoned, env([]int64{1})},
			{"task-ao", store.TaskAborted, env([]int64{1})},
			{"task-op", store.TaskOpen, env([]int64{1, 3}, 2)},
		}
		for i, tk := range tasks {
			insertTask(t, s, newTask(tk.id, "session-1", taskT0.Add(time.Duration(i)*time.Minute), tk.env))
			if tk.status != store.TaskOpen {
				closeTask(t, s, tk.id, tk.status, taskT0.Add(time.Hour))
			}
		}
		want := map[int64]store.Precedent{1: {Verified: 2, Counter: 1, Exposures: 5}, 2: {Verified: 0, Counter: 1, Exposures: 1}}
		for _, ids := range [][]int64{{1, 2, 3, 4}, nil} {
			got, err := s.PrecedentCounts(ctx, s.DB, ids)
			if err != nil || len(got) != len(want) || got[1] != want[1] || got[2] != want[2] {
				t.Fatalf("precedent of %v: %+v, %v; want %+v", ids, got, err, want)
			}
		}
		if got, err := s.PrecedentCounts(ctx, s.DB, []int64{2}); err != nil || len(got) != 1 || got[2] != want[2] {
			t.Fatalf("precedent of 2: %+v, %v", got, err)
		}
		if got, err := s.PrecedentCounts(ctx, s.DB, []int64{}); err != nil || len(got) != 0 {
			t.Fatalf("precedent of none: %+v, %v", got, err)
		}

		outcomes, err := s.TaskOutcomes(ctx, s.DB, []int64{2})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range outcomes {
			got = append(got, fmt.Sprintf("%s:%s:%t:%v", o.ID, o.Status, o.Closed, o.EnvironmentIDs))
		}
		if w := "task-f1:failed:true:[1 2] task-op:open:false:[]"; strings.Join(got, " ") != w {
			t.Fatalf("outcomes of 2: %s; want %s", strings.Join(got, " "), w)
		}
		if all, err := s.TaskOutcomes(ctx, s.DB, nil); err != nil || len(all) != len(tasks) {
			t.Fatalf("all outcomes: %d, %v", len(all), err)
		}

		// A per-turn fallback's task is never precedent, and says so.
		turn := newTask("turn-session-1-4", "session-1", taskT0.Add(2*time.Hour), env([]int64{2}))
		turn.Kind = store.TaskKindTurn
		insertTask(t, s, turn)
		closeTask(t, s, turn.ID, store.TaskFailed, taskT0.Add(3*time.Hour))
		if got, err := s.PrecedentCounts(ctx, s.DB, []int64{2}); err != nil || got[2] != want[2] {
			t.Fatalf("precedent of 2 with a failed turn: %+v, %v; want %+v", got, err, want[2])
		}
		outcomes, err = s.TaskOutcomes(ctx, s.DB, []int64{2})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outcomes {
			if o.Turn != (o.ID == turn.ID) {
				t.Fatalf("outcome %s: Turn = %t", o.ID, o.Turn)
			}
		}
	})
}

// InsertTask, CloseTask and MarkTaskReflected run inside a caller's
// transaction: rolled back, nothing of them stays.
func TestTaskWritesJoinTheCallersTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		boom := errors.New("boom")
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if err := s.InsertTask(ctx, tx, newTask("task-1", "session-1", taskT0, env([]int64{1}))); err != nil {
				return err
			}
			if _, err := s.CloseTask(ctx, tx, "task-1", store.TaskClose{Status: store.TaskFailed, At: taskT0, CloseSeq: 3}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if _, err := s.GetTask(ctx, s.DB, "task-1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("rolled back task: %v", err)
		}
		if p, _ := s.PrecedentCounts(ctx, s.DB, nil); len(p) != 0 {
			t.Fatalf("rolled back task_lessons: %+v", p)
		}
	})
}
