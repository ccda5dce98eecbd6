package retrosession_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	memsvc "github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// seedLesson stores a structured workspace lesson and returns it with its id.
func seedLesson(t *testing.T, s *store.Store, problem string) memory.Memory {
	t.Helper()
	m := memory.Memory{Kind: memory.Lesson, Scope: memory.LessonWorkspace, Workspace: ws, Origin: memory.OriginPanel,
		RecordedAt: s.Now().Add(-2 * time.Hour), Lesson: &memory.LessonFields{Problem: problem,
			Correction: "check the module root before running go test", Boundary: "this repo's layout"}}
	m.Text = lesson.Line(m)
	id, err := s.InsertMemory(context.Background(), s.DB, memsvc.ToRow(m))
	if err != nil {
		t.Fatal(err)
	}
	m.ID = id
	return m
}

// A retro's supersede of a structured lesson passes the precedent gate:
// without evidence it is refused and counted, the rest of the retro
// applies; with a failed task that had the lesson in force it applies.
func TestRetroSupersedeOfALessonNeedsPrecedent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		bare := seedLesson(t, s, "go test fails outside the module")
		backed := seedLesson(t, s, "go vet is slow on the whole tree")
		fact := seed(t, s, "fact", "deploys go through make ship")
		snap, _ := json.Marshal(lesson.BuildSnapshot([]memory.Memory{backed}, s.Now().Add(-time.Hour), s.Now().Add(-time.Hour)))
		if err := s.InsertTask(ctx, s.DB, store.Task{ID: "task-failed", Kind: store.TaskKindTask, SessionID: "session-0", Workspace: ws,
			Goal: "vet it", OpenedAt: s.Now().Add(-time.Hour), Environment: string(snap)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CloseTask(ctx, s.DB, "task-failed", store.TaskClose{Status: store.TaskFailed, At: s.Now().Add(-30 * time.Minute),
			ReflectMode: "job"}); err != nil {
			t.Fatal(err)
		}
		if _, err := memsvc.New(s, config.Memory{}, config.Digest{}).Digest(ctx, ws); err != nil {
			t.Fatal(err)
		}
		out := retro.Output{
			Facts:   []retro.Entry{{Text: "the build uses bazel now"}},
			Handoff: []string{"one", "two", "three"},
			Supersede: []retro.Supersede{
				{ID: retro.Ref{ID: bare.ID}, Why: "wrong"},
				{ID: retro.Ref{ID: backed.ID}, Why: "vet is fast now", Evidence: []string{"task-failed"}},
				{ID: retro.Ref{ID: fact}, Why: "make ship was removed"},
			},
		}
		e := start(t, s, script(mustJSON(out), ""))
		session(t, s, "session-1")
		id := e.run(t, "session-1")

		get := func(id int64) store.Memory {
			m, err := s.GetMemory(ctx, s.DB, id)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		if m := get(bare.ID); !m.InvalidAt.IsZero() || m.State != store.StateActive {
			t.Errorf("a supersede without evidence applied: %+v", m)
		}
		if m := get(backed.ID); m.InvalidAt.IsZero() || m.State == store.StateActive {
			t.Errorf("a supersede with a failed task's evidence was refused: %+v", m)
		}
		if m := get(fact); m.InvalidAt.IsZero() {
			t.Errorf("a fact's supersede needs no evidence: %+v", m)
		}
		run, ok, err := s.GetRetroRun(ctx, s.DB, id)
		if !ok || err != nil {
			t.Fatal(run, ok, err)
		}
		var c struct {
			Added          int            `json:"added"`
			Invalidated    int            `json:"invalidated"`
			SupersedesByID int            `json:"supersedes_by_id"`
			DroppedIDs     map[string]int `json:"dropped_ids"`
		}
		if err := json.Unmarshal([]byte(run.Counts), &c); err != nil {
			t.Fatal(err)
		}
		if c.Added != 1 || c.Invalidated != 2 || c.SupersedesByID != 2 || c.DroppedIDs[retro.DropPrecedent] != 1 {
			t.Errorf("counts %s", run.Counts)
		}
	})
}

// With reflection.precedent_gate off, a retro supersedes a structured
// lesson on its word alone, as it did every memory before the gate.
func TestRetroSupersedeWithTheGateOff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		bare := seedLesson(t, s, "go test fails outside the module")
		if _, err := memsvc.New(s, config.Memory{}, config.Digest{}).Digest(ctx, ws); err != nil {
			t.Fatal(err)
		}
		out := retro.Output{Handoff: []string{"one", "two", "three"},
			Supersede: []retro.Supersede{{ID: retro.Ref{ID: bare.ID}, Why: "wrong"}}}
		e := startRetros(t, s, retros{llm: llmtest.Options{Fake: fakeds.Options{Script: script(mustJSON(out), "")}}, jobs: fast, noGate: true})
		session(t, s, "session-1")
		e.run(t, "session-1")
		if m, err := s.GetMemory(ctx, s.DB, bare.ID); err != nil || m.InvalidAt.IsZero() {
			t.Fatalf("gate off: %+v, %v; want superseded", m, err)
		}
	})
}
