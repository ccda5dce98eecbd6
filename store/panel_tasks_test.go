package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// PanelTasks with a lesson lists exactly the tasks its precedent counts:
// lesson 7 was in force for two tasks that succeeded, one that failed and
// one abandoned (and an open task and a turn, which do not count), so each
// of its counts differs and a wrong filter shows.
func TestPanelTasksOfALesson(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		tasks := []struct {
			id, status string
			lessons    []int64
			turn       bool
		}{
			{"task-1", store.TaskSucceeded, []int64{7, 3}, false},
			{"task-2", store.TaskSucceeded, []int64{7}, false},
			{"task-3", store.TaskFailed, []int64{7, 3}, false},
			{"task-4", store.TaskAbandoned, []int64{7}, false},
			{"task-5", store.TaskOpen, []int64{7}, false},
			{"turn-6", store.TaskSucceeded, []int64{7}, true},
			{"task-7", store.TaskSucceeded, []int64{3}, false},
		}
		for i, c := range tasks {
			task := newTask(c.id, "session-1", taskT0.Add(time.Duration(i)*time.Minute), env(c.lessons))
			if c.turn {
				task.Kind = store.TaskKindTurn
			}
			insertTask(t, s, task)
			if c.status != store.TaskOpen {
				closeTask(t, s, c.id, c.status, taskT0.Add(time.Hour+time.Duration(i)*time.Minute))
			}
		}
		prec, err := s.PrecedentCounts(ctx, s.DB, []int64{7, 3})
		if err != nil {
			t.Fatal(err)
		}
		if p := prec[7]; p.Verified != 2 || p.Counter != 1 || p.Exposures != 4 {
			t.Fatalf("the fixture's precedent of 7: %+v", p)
		}
		ids := func(f store.TaskPage) []string {
			t.Helper()
			rows, err := s.PanelTasks(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range rows {
				out = append(out, r.ID)
			}
			return out
		}
		for _, c := range []struct {
			f    store.TaskPage
			want int
		}{
			{store.TaskPage{Lesson: 7, Status: store.TaskSucceeded}, prec[7].Verified},
			{store.TaskPage{Lesson: 7, Status: store.TaskFailed}, prec[7].Counter},
			{store.TaskPage{Lesson: 7}, prec[7].Exposures},
			{store.TaskPage{Lesson: 3, Status: store.TaskSucceeded}, prec[3].Verified},
			{store.TaskPage{Lesson: 3, Status: store.TaskFailed}, prec[3].Counter},
			{store.TaskPage{Lesson: 3}, prec[3].Exposures},
		} {
			if got := ids(c.f); len(got) != c.want {
				t.Errorf("%+v: %v, want %d tasks", c.f, got, c.want)
			}
		}
		// The last closed first; a page is bounded.
		if got := ids(store.TaskPage{Lesson: 7}); len(got) != 4 || got[0] != "task-4" || got[3] != "task-1" {
			t.Errorf("order: %v", got)
		}
		if got := ids(store.TaskPage{Lesson: 7, Limit: 2, Offset: 2}); len(got) != 2 || got[0] != "task-2" || got[1] != "task-1" {
			t.Errorf("second page: %v", got)
		}
		// Without a lesson, every task: the open one first.
		if got := ids(store.TaskPage{}); len(got) != len(tasks) || got[0] != "task-5" {
			t.Errorf("every task: %v", got)
		}

	})
}
