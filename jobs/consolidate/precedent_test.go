package consolidate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mullhq/mull/jobs/consolidate"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A consolidation never supersedes a structured lesson (the precedent
// gate's rule, learn/consolidate.Governed): a merge cites no evidence
// task, so two lessons saying the same stay, and the free-text duplicates
// beside them merge as before.
func TestConsolidateLeavesStructuredLessons(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		merge, _ := json.Marshal(map[string]any{"merges": []map[string]any{{"cluster": 1, "text": "the repo uses pnpm, not npm"}}})
		e := setup(t, s, consolidate.Settings{})
		if err := e.fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{
			{Kind: consolidate.MergeArgs{}.Kind(), Response: &fakeds.Response{Content: string(merge)}},
			{Kind: consolidate.DeriveArgs{}.Kind(), Response: &fakeds.Response{Content: `{"principles":["prefer pnpm scripts for every task","run the tests on both databases","keep migrations numbered"],"hypotheses":["the flaky test shares a schema"],"prefetch":["the repo uses pnpm","tests run on SQLite and Postgres","migrations are numbered"]}`}},
		}}); err != nil {
			t.Fatal(err)
		}
		e.start(t)
		seed(t, s, memory.Fact, filler(10)...)
		facts := seed(t, s, memory.Fact, "the repo uses pnpm, not npm", "This repo uses pnpm, not npm!")
		var lessons []int64
		for range 2 {
			m := memory.Memory{Kind: memory.Lesson, Scope: memory.LessonWorkspace, Workspace: ws, Origin: memory.OriginRetro,
				RecordedAt: time.Now().UTC().Add(-24 * time.Hour), Lesson: &memory.LessonFields{Problem: "go test fails outside the module root",
					Correction: "cd to the directory holding go.mod first", Boundary: "this repo's layout"}}
			m.Text = lesson.Line(m)
			id, err := s.InsertMemory(ctx, s.DB, memories.ToRow(m))
			if err != nil {
				t.Fatal(err)
			}
			lessons = append(lessons, id)
		}

		st, c := e.run(t, consolidate.Args{Workspace: ws, Reason: consolidate.ReasonManual, Requested: "1"})
		if c == nil {
			t.Fatalf("no run: %s", st.LastNote)
		}
		if c.Merged != 1 || c.Superseded != 2 {
			t.Errorf("counts %+v, want the facts merged, the lessons left", c)
		}
		for _, id := range lessons {
			if m, err := s.GetMemory(ctx, s.DB, id); err != nil || !m.InvalidAt.IsZero() || m.State != store.StateActive {
				t.Errorf("lesson %d: %+v, %v; want it in force", id, m, err)
			}
		}
		for _, id := range facts {
			if m, err := s.GetMemory(ctx, s.DB, id); err != nil || m.InvalidAt.IsZero() {
				t.Errorf("fact %d: %+v, %v; want it merged", id, m, err)
			}
		}
	})
}
