package memories_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A structured lesson goes through the store and back unchanged: its
// fields as JSON, its scope, task, state and promotion source.
func TestLessonRoundTrip(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		in := memory.Memory{Workspace: "/w", Kind: memory.Failure, Text: "Avoid: go test ./... here", Origin: memory.OriginRetro,
			RecordedAt: t0, Scope: memory.LessonSession, ScopeSession: "session-7", TaskID: "task-3", PromotedFromID: 4,
			Lesson: &memory.LessonFields{Problem: "the suite times out", Avoid: "go test ./...", Instead: "go test ./store/",
				Confidence: memory.ConfidenceHigh, Boundary: "2 cores", SourceText: "never injected"}}
		id, err := s.InsertMemory(ctx, s.DB, memories.ToRow(in))
		if err != nil {
			t.Fatal(err)
		}
		row, err := s.GetMemory(ctx, s.DB, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := memories.FromRowChecked(row)
		in.ID, in.State = id, memory.StateActive
		if err != nil || !reflect.DeepEqual(got, in) {
			t.Fatalf("got %+v (%+v), %v\nwant %+v (%+v)", got, got.Lesson, err, in, in.Lesson)
		}
		if plain := memories.FromRow(store.Memory{Kind: "fact"}); plain.Lesson != nil {
			t.Fatalf("a memory without lesson JSON got fields %+v", plain.Lesson)
		}
	})
}

func TestParseLessonRefusesBadJSON(t *testing.T) {
	if f, err := memories.ParseLesson(""); f != nil || err != nil {
		t.Fatalf("empty: %+v, %v", f, err)
	}
	if _, err := memories.ParseLesson(`{"problem": 3}`); err == nil || !strings.Contains(err.Error(), "lesson fields") {
		t.Fatalf("bad: %v", err)
	}
	m, err := memories.FromRowChecked(store.Memory{ID: 9, Lesson: `{"problem"`})
	if err == nil || !strings.Contains(err.Error(), "memory 9") || m.Lesson != nil || m.ID != 9 {
		t.Fatalf("checked: %+v, %v", m, err)
	}
	if memories.LessonJSON(nil) != "" {
		t.Fatal("nil fields are not ''")
	}
}
