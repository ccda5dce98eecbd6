package store_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestReflections(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		insertTask(t, s, newTask("task-1", "session-1", taskT0, env([]int64{1})))
		closeTask(t, s, "task-1", store.TaskFailed, taskT0.Add(time.Hour))
		other := newTask("task-2", "session-2", taskT0, env(nil))
		other.Workspace = "/v"
		insertTask(t, s, other)
		closeTask(t, s, "task-2", store.TaskSucceeded, taskT0.Add(time.Hour))

		job := store.Reflection{TaskID: "task-1", By: store.ReflectedByJob, JobID: 41, Assessment: "went wrong at step 2",
			Critique: `{"steelman_rounds":[]}`, Verdict: "narrowed", LessonsRecorded: 2, RecordedAt: taskT0.Add(2 * time.Hour),
			Items: []store.ReflectionItem{
				{Index: 0, Relation: store.RelationNew, MemoryID: 10, Critique: `{"claim":"c"}`, Verdict: "narrowed"},
				{Index: 1, Relation: store.RelationRevise, TargetID: 1, RefusedCheck: "evidence_not_failed", RefusedReason: "task-9 succeeded"},
				{Index: 2, Relation: store.RelationRepeat, TargetID: 1, MemoryID: 1},
				{Index: 3, Relation: store.RelationRevise, TargetID: 1, RefusedCheck: "evidence_missing", RefusedReason: "no evidence_task_ids"},
				{Index: 4, Relation: store.RelationRevise, TargetID: 1, RefusedCheck: "evidence_missing", RefusedReason: "none"},
			}}
		id, err := s.InsertReflection(ctx, s.DB, job)
		if err != nil || id < 1 {
			t.Fatalf("insert: %d, %v", id, err)
		}
		agent := store.Reflection{TaskID: "task-2", By: store.ReflectedByAgent, Assessment: "fine", RecordedAt: taskT0.Add(3 * time.Hour),
			Items: []store.ReflectionItem{{Index: 0, Relation: store.RelationNone}}}
		if _, err := s.InsertReflection(ctx, s.DB, agent); err != nil {
			t.Fatal(err)
		}

		got, err := s.ListReflections(ctx, s.DB, "task-1")
		if err != nil || len(got) != 1 {
			t.Fatalf("list: %+v, %v", got, err)
		}
		r := got[0]
		if r.ID != id || r.By != store.ReflectedByJob || r.JobID != 41 || r.Assessment != job.Assessment || r.Critique != job.Critique ||
			r.Verdict != "narrowed" || r.LessonsRecorded != 2 || !r.RecordedAt.Equal(job.RecordedAt) || len(r.Items) != 5 {
			t.Fatalf("reflection %+v", r)
		}
		for i, it := range r.Items {
			if it != job.Items[i] {
				t.Errorf("item %d: %+v; want %+v", i, it, job.Items[i])
			}
		}

		st, err := s.ReflectionStats(ctx, s.DB, "")
		if err != nil {
			t.Fatal(err)
		}
		if st.Reflections != 2 || st.LessonsRecorded != 2 ||
			!maps.Equal(st.ByReflectedBy, map[string]int{"job": 1, "agent": 1}) ||
			!maps.Equal(st.Proposed, map[string]int{"new": 1, "revise": 3, "repeat": 1, "none": 1}) ||
			!maps.Equal(st.Accepted, map[string]int{"new": 1, "revise": 0, "repeat": 1, "none": 1}) ||
			!maps.Equal(st.Refusals, map[string]int{"evidence_missing": 2, "evidence_not_failed": 1}) {
			t.Fatalf("stats %+v", st)
		}
		st, err = s.ReflectionStats(ctx, s.DB, "/v")
		if err != nil || st.Reflections != 1 || !maps.Equal(st.Proposed, map[string]int{"none": 1}) || len(st.Refusals) != 0 {
			t.Fatalf("stats of /v %+v, %v", st, err)
		}
	})
}

func TestInsertReflectionRefusesBadInput(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		insertTask(t, s, newTask("task-1", "session-1", taskT0, env(nil)))
		good := store.Reflection{TaskID: "task-1", By: store.ReflectedByJob, RecordedAt: taskT0}
		for _, tt := range []struct {
			name string
			edit func(*store.Reflection)
			want string
		}{
			{"by", func(r *store.Reflection) { r.By = "panel" }, `by "panel"`},
			{"time", func(r *store.Reflection) { r.RecordedAt = time.Time{} }, "recorded_at is required"},
			{"critique", func(r *store.Reflection) { r.Critique = "{not json" }, "critique"},
			{"relation", func(r *store.Reflection) { r.Items = []store.ReflectionItem{{Relation: "update"}} }, `relation "update"`},
			{"index twice", func(r *store.Reflection) {
				r.Items = []store.ReflectionItem{{Index: 1, Relation: "new"}, {Index: 1, Relation: "none"}}
			}, "item 1 appears twice"},
			{"reason alone", func(r *store.Reflection) {
				r.Items = []store.ReflectionItem{{Relation: "revise", RefusedReason: "why"}}
			}, "without the check"},
			{"unknown task", func(r *store.Reflection) { r.TaskID = "task-nope" }, "not found"},
		} {
			r := good
			tt.edit(&r)
			if _, err := s.InsertReflection(ctx, s.DB, r); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: %v; want %q", tt.name, err, tt.want)
			}
		}
		if st, _ := s.ReflectionStats(ctx, s.DB, ""); st.Reflections != 0 || len(st.Proposed) != 0 {
			t.Fatalf("a refused reflection was stored: %+v", st)
		}
	})
}
