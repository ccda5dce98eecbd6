package memories_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// storeLesson stores a structured lesson in scope (ws its library, sess
// the session a session or reflection scope names) recorded at.
func storeLesson(t *testing.T, s *store.Store, ws string, scope memory.LessonScope, sess, problem string, at time.Time) int64 {
	t.Helper()
	m := memory.Memory{Workspace: ws, Kind: memory.Lesson, Scope: scope, ScopeSession: sess, RecordedAt: at,
		Origin: memory.OriginPanel, Importance: 5,
		Lesson: &memory.LessonFields{Problem: problem, Correction: "check the lockfile first, then " + problem,
			Confidence: memory.ConfidenceMedium, Boundary: "seen in this project"}}
	m.Text = lesson.Line(m)
	if err := lesson.Validate(m); err != nil {
		t.Fatalf("lesson %q: %v", problem, err)
	}
	id, err := s.InsertMemory(context.Background(), s.DB, memories.ToRow(m))
	if err != nil {
		t.Fatalf("store lesson %q: %v", problem, err)
	}
	return id
}

func ids(ms []memory.Memory) []int64 {
	out := []int64{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// The lessons in force for a session are its digest's: the workspace's,
// the global ones and those scoped to the session, up to the published
// watermark, as they stood at publication.
func TestLessonsInForceFollowsThePublishedDigest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, c := newService(t, s, "workspace")
		if ms, at, err := svc.LessonsInForce(ctx, s.DB, "/w", "s1"); err != nil || ms != nil || !at.IsZero() {
			t.Fatalf("nothing published: %v %v %v", ms, at, err)
		}
		ws := storeLesson(t, s, "/w", memory.LessonWorkspace, "", "npm install fails", t0)
		global := storeLesson(t, s, "", memory.LessonGlobal, "", "go test hangs", t0)
		storeLesson(t, s, "/other", memory.LessonWorkspace, "", "make fails", t0)
		mine := storeLesson(t, s, "/other", memory.LessonSession, "s1", "the build cache is stale", t0)
		refl := storeLesson(t, s, "/w", memory.LessonReflection, "s2", "the linter is slow", t0)
		q := storeLesson(t, s, "/w", memory.LessonWorkspace, "", "quarantined one", t0)
		if _, err := s.DB.ExecContext(ctx, `update memories set quarantined = true where id = $1`, q); err != nil {
			t.Fatal(err)
		}
		c.add(time.Minute)
		d, err := svc.Digest(ctx, "/w")
		if err != nil {
			t.Fatal(err)
		}
		// After publication: a new lesson waits for the next batch, and a
		// superseded one still counts (the digest still shows it).
		c.add(time.Minute)
		fresh := storeLesson(t, s, "/w", memory.LessonWorkspace, "", "pnpm lock drift", c.now)
		if err := s.SetMemoryState(ctx, s.DB, ws, store.StateSuperseded, c.now, "test", 0); err != nil {
			t.Fatal(err)
		}
		got, at, err := svc.LessonsInForce(ctx, s.DB, "/w", "s1")
		if err != nil {
			t.Fatal(err)
		}
		if want := []int64{ws, global, mine}; !slices.Equal(ids(got), want) || !at.Equal(d.PublishedAt) {
			t.Fatalf("s1 sees %v at %v, want %v at %v", ids(got), at, want, d.PublishedAt)
		}
		got, _, err = svc.LessonsInForce(ctx, s.DB, "/w", "s2")
		if want := []int64{ws, global, refl}; err != nil || !slices.Equal(ids(got), want) {
			t.Fatalf("s2 sees %v (%v), want %v", ids(got), err, want)
		}
		// At a later watermark and time: the new one in, the superseded out.
		got, err = svc.LessonsAsOf(ctx, s.DB, "/w", "", 1<<40, c.now)
		if want := []int64{global, fresh}; err != nil || !slices.Equal(ids(got), want) {
			t.Fatalf("as of now %v (%v), want %v", ids(got), err, want)
		}
	})
}

// memory_search finds a structured lesson only where its scope shows it:
// one session's reflection lesson is not another session's search hit.
func TestSearchKeepsLessonScopes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, _ := newService(t, s, "workspace")
		own := storeLesson(t, s, "/w", memory.LessonReflection, "s1", "pnpm install fails on the lockfile", s.Now())
		shared := storeLesson(t, s, "/w", memory.LessonWorkspace, "", "pnpm build needs node 22", s.Now())
		for _, c := range []struct {
			session string
			want    []int64
		}{{"s1", []int64{own, shared}}, {"s2", []int64{shared}}, {"", []int64{shared}}} {
			hits, err := svc.Search(ctx, memories.Query{Workspace: "/w", Session: c.session, Text: "pnpm", Peek: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, h := range hits {
				got = append(got, h.ID)
			}
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(c.want))) {
				t.Errorf("session %q finds %v, want %v", c.session, got, c.want)
			}
		}
	})
}
