package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The panel's lesson reads: a page of lessons by scope (a lesson from
// before scopes read as ScopeOf does) and state, the counts by scope and
// state, and the reflections' items filtered by relation and refusal.
func TestPanelLessonReads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		g := insertLesson(t, s, store.Memory{Text: "global one", Scope: "global"})
		old := insertLesson(t, s, store.Memory{Workspace: "/w", Text: "from before scopes"})
		ws := insertLesson(t, s, store.Memory{Workspace: "/w", Text: "workspace one", Scope: "workspace"})
		refl := insertLesson(t, s, store.Memory{Workspace: "/w", Kind: "failure", Text: "reflection one", Scope: "reflection", ScopeSession: "s1"})
		insertLesson(t, s, store.Memory{Workspace: "/w", Kind: "fact", Text: "not a lesson"})
		if err := s.SetMemoryState(ctx, s.DB, ws, store.StateDeprecated, taskT0, "stale", 0); err != nil {
			t.Fatal(err)
		}

		page, err := s.PanelLessons(ctx, store.LessonPage{Scope: "workspace"})
		if err != nil || len(page) != 2 || page[0].ID != ws || page[1].ID != old {
			t.Fatalf("workspace lessons %+v, %v", page, err)
		}
		page, err = s.PanelLessons(ctx, store.LessonPage{State: store.StateActive, Limit: 2, Offset: 1})
		if err != nil || len(page) != 2 || page[0].ID != old || page[1].ID != g {
			t.Fatalf("active, second page %+v, %v", page, err)
		}
		page, err = s.PanelLessons(ctx, store.LessonPage{Kind: "failure", Workspace: "/w"})
		if err != nil || len(page) != 1 || page[0].ID != refl {
			t.Fatalf("failures of /w %+v, %v", page, err)
		}
		counts, err := s.LessonCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, c := range counts {
			got[c.Scope+"/"+c.State] += c.N
		}
		if len(got) != 4 || got["global/active"] != 1 || got["workspace/active"] != 1 || got["workspace/deprecated"] != 1 || got["reflection/active"] != 1 {
			t.Fatalf("counts %+v", counts)
		}

		insertTask(t, s, newTask("task-1", "s1", taskT0, env([]int64{g})))
		closeTask(t, s, "task-1", store.TaskFailed, taskT0.Add(time.Minute))
		if _, err := s.InsertReflection(ctx, s.DB, store.Reflection{TaskID: "task-1", By: store.ReflectedByJob, JobID: 5,
			RecordedAt: taskT0.Add(2 * time.Minute), LessonsRecorded: 1, Items: []store.ReflectionItem{
				{Index: 0, Relation: store.RelationNew, MemoryID: refl},
				{Index: 1, Relation: store.RelationRevise, TargetID: g, RefusedCheck: "no_evidence", RefusedReason: "no evidence task"},
				{Index: 2, Relation: store.RelationNone},
			}}); err != nil {
			t.Fatal(err)
		}
		items, err := s.PanelReflectionItems(ctx, store.ItemPage{Refused: true})
		if err != nil || len(items) != 1 || items[0].Relation != "revise" || items[0].RefusedReason != "no evidence task" ||
			items[0].TaskID != "task-1" || items[0].SessionID != "s1" || items[0].Workspace != "/w" || items[0].JobID != 5 {
			t.Fatalf("refused items %+v, %v", items, err)
		}
		items, err = s.PanelReflectionItems(ctx, store.ItemPage{Accepted: true, Limit: 1, Offset: 1})
		if err != nil || len(items) != 1 || items[0].Index != 2 {
			t.Fatalf("accepted, second page %+v, %v", items, err)
		}
		for f, want := range map[store.ItemPage]int{{Relation: "new"}: 1, {Check: "no_evidence"}: 1, {Check: "target"}: 0,
			{Workspace: "/other"}: 0, {}: 3, {Memory: g}: 1, {Memory: refl}: 1, {Memory: ws}: 0} {
			if items, err := s.PanelReflectionItems(ctx, f); err != nil || len(items) != want {
				t.Errorf("%+v: %d items, %v; want %d", f, len(items), err, want)
			}
		}
	})
}
