package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func insertLesson(t *testing.T, s *store.Store, m store.Memory) int64 {
	t.Helper()
	if m.Kind == "" {
		m.Kind = "lesson"
	}
	m.TextNorm = strings.ToLower(m.Text)
	m.Origin, m.RecordedAt = "retro", cmpTime(m.RecordedAt, taskT0)
	id, err := s.InsertMemory(context.Background(), s.DB, m)
	if err != nil {
		t.Fatalf("insert %q: %v", m.Text, err)
	}
	return id
}

func cmpTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}

func TestLessonColumnsRoundTrip(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		in := store.Memory{Workspace: "/w", Kind: "failure", Text: "Avoid: go test ./... on 2 cores", Origin: "retro",
			RecordedAt: taskT0, Scope: "session", ScopeSession: "session-7", TaskID: "task-3", PromotedFromID: 4,
			Lesson: `{"problem":"the suite times out","avoid":"go test ./...","boundary":"this machine"}`}
		in.TextNorm = strings.ToLower(in.Text)
		id, err := s.InsertMemory(ctx, s.DB, in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetMemory(ctx, s.DB, id)
		in.ID, in.State = id, store.StateActive
		if err != nil || got != in {
			t.Fatalf("got %+v, %v\nwant %+v", got, err, in)
		}
		for _, bad := range []store.Memory{
			{Kind: "lesson", Text: "x", Origin: "retro", RecordedAt: taskT0, Lesson: "problem: x"},
			{Kind: "lesson", Text: "x", Origin: "retro", RecordedAt: taskT0, Lesson: `["problem"]`},
			{Kind: "lesson", Text: "x", Origin: "retro", RecordedAt: taskT0, State: store.StateDeprecated},
		} {
			if _, err := s.InsertMemory(ctx, s.DB, bad); err == nil {
				t.Errorf("inserted %+v", bad)
			}
		}
	})
}

// SetMemoryState follows the lifecycle: active → superseded, deprecated,
// deleted; superseded or deprecated → deleted; nothing back to active and
// nothing out of deleted. The first move stamps invalid_at and the reason,
// a later one keeps them; the row is never removed, and a non-active
// memory is not served.
func TestSetMemoryState(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a := insertLesson(t, s, store.Memory{Workspace: "/w", Text: "lesson a"})
		b := insertLesson(t, s, store.Memory{Workspace: "/w", Text: "lesson b"})
		c := insertLesson(t, s, store.Memory{Workspace: "/w", Text: "lesson c"})
		t1, t2 := taskT0.Add(time.Hour), taskT0.Add(2*time.Hour)

		if err := s.SetMemoryState(ctx, s.DB, a, store.StateSuperseded, t1, "revised", b); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMemoryState(ctx, s.DB, c, store.StateDeprecated, t1, "not recommended", 99); err != nil {
			t.Fatal(err)
		}
		ma, _ := s.GetMemory(ctx, s.DB, a)
		mc, _ := s.GetMemory(ctx, s.DB, c)
		if ma.State != store.StateSuperseded || !ma.InvalidAt.Equal(t1) || ma.InvalidReason != "revised" || ma.SupersededBy != b {
			t.Fatalf("superseded %+v", ma)
		}
		if mc.State != store.StateDeprecated || !mc.InvalidAt.Equal(t1) || mc.SupersededBy != 0 {
			t.Fatalf("deprecated %+v (superseded_by is only a supersede's)", mc)
		}
		if live, _ := s.ListMemories(ctx, s.DB, store.MemoryFilter{}); len(live) != 1 || live[0].ID != b {
			t.Fatalf("live %+v; want b alone", live)
		}

		for _, tt := range []struct {
			id   int64
			to   string
			from string
		}{
			{a, store.StateActive, store.StateSuperseded},
			{a, store.StateDeprecated, store.StateSuperseded},
			{c, store.StateActive, store.StateDeprecated},
			{c, store.StateSuperseded, store.StateDeprecated},
			{c, store.StateDeprecated, store.StateDeprecated},
		} {
			err := s.SetMemoryState(ctx, s.DB, tt.id, tt.to, t2, "again", 0)
			var se *store.StateError
			if !errors.As(err, &se) || se.From != tt.from || se.To != tt.to {
				t.Errorf("%d → %s: %v; want a StateError from %s", tt.id, tt.to, err, tt.from)
			}
		}
		// Superseded → deleted: the state moves, the first stamp stays.
		if err := s.SetMemoryState(ctx, s.DB, a, store.StateDeleted, t2, "tombstone", 0); err != nil {
			t.Fatal(err)
		}
		ma, _ = s.GetMemory(ctx, s.DB, a)
		if ma.State != store.StateDeleted || !ma.InvalidAt.Equal(t1) || ma.InvalidReason != "revised" || ma.SupersededBy != b {
			t.Fatalf("deleted %+v; want the first invalidation kept", ma)
		}
		for _, to := range []string{store.StateActive, store.StateDeleted, store.StateDeprecated} {
			var se *store.StateError
			if err := s.SetMemoryState(ctx, s.DB, a, to, t2, "", 0); !errors.As(err, &se) || se.From != store.StateDeleted {
				t.Errorf("deleted → %s: %v", to, err)
			}
		}
		if err := s.SetMemoryState(ctx, s.DB, b, "archived", t2, "", 0); err == nil || !strings.Contains(err.Error(), `"archived"`) {
			t.Fatalf("unknown state: %v", err)
		}
		if err := s.SetMemoryState(ctx, s.DB, b, store.StateDeleted, time.Time{}, "", 0); err == nil {
			t.Fatal("a move without a time was accepted")
		}
		if err := s.SetMemoryState(ctx, s.DB, 999, store.StateDeleted, t2, "", 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown memory: %v", err)
		}
		if all, _ := s.ListMemories(ctx, s.DB, store.MemoryFilter{All: true}); len(all) != 3 {
			t.Fatalf("rows removed: %d left", len(all))
		}
		// InvalidateMemory (forget, supersede) sets the state with invalid_at.
		if ok, err := s.InvalidateMemory(ctx, s.DB, b, t2, "forgotten", 0); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if mb, _ := s.GetMemory(ctx, s.DB, b); mb.State != store.StateDeleted || !mb.InvalidAt.Equal(t2) {
			t.Fatalf("forgotten %+v", mb)
		}
	})
}

func TestListLessons(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		g := insertLesson(t, s, store.Memory{Workspace: "", Text: "global lesson", Scope: "global"})
		w := insertLesson(t, s, store.Memory{Workspace: "/w", Kind: "directive", Text: "workspace directive", Scope: "workspace"})
		sess := insertLesson(t, s, store.Memory{Workspace: "/w", Kind: "failure", Text: "session failure", Scope: "session", ScopeSession: "session-1"})
		refl := insertLesson(t, s, store.Memory{Workspace: "/w", Text: "reflection lesson", Scope: "reflection", ScopeSession: "session-2"})
		dep := insertLesson(t, s, store.Memory{Workspace: "/w", Text: "deprecated lesson", Scope: "workspace"})
		q := insertLesson(t, s, store.Memory{Workspace: "/w", Text: "quarantined lesson", Scope: "workspace", Quarantined: true})
		insertLesson(t, s, store.Memory{Workspace: "/w", Kind: "fact", Text: "a fact"})
		if err := s.SetMemoryState(ctx, s.DB, dep, store.StateDeprecated, taskT0.Add(time.Hour), "old", 0); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name string
			f    store.LessonFilter
			want []int64
		}{
			{"all", store.LessonFilter{}, []int64{g, w, sess, refl, dep}},
			{"quarantined too", store.LessonFilter{Quarantined: true}, []int64{g, w, sess, refl, dep, q}},
			{"active", store.LessonFilter{States: []string{store.StateActive}}, []int64{g, w, sess, refl}},
			{"deprecated", store.LessonFilter{States: []string{store.StateDeprecated}}, []int64{dep}},
			{"no states", store.LessonFilter{States: []string{}}, nil},
			{"global library", store.LessonFilter{Workspaces: []string{""}}, []int64{g}},
			{"/w and global", store.LessonFilter{Workspaces: []string{"/w", ""}, States: []string{store.StateActive}}, []int64{g, w, sess, refl}},
			{"scopes", store.LessonFilter{Scopes: []string{"session", "reflection"}}, []int64{sess, refl}},
			{"session", store.LessonFilter{Session: "session-1"}, []int64{sess}},
			{"ids", store.LessonFilter{IDs: []int64{refl, g, 999}}, []int64{g, refl}},
			{"no ids", store.LessonFilter{IDs: []int64{}}, nil},
		} {
			got, err := s.ListLessons(ctx, s.DB, tt.f)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			var ids []int64
			for _, m := range got {
				ids = append(ids, m.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tt.want) {
				t.Errorf("%s: %v; want %v", tt.name, ids, tt.want)
			}
		}
	})
}

func TestLinks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a := insertLesson(t, s, store.Memory{Workspace: "/w", Text: "use pnpm"})
		b := insertLesson(t, s, store.Memory{Workspace: "/w", Text: "use npm in CI"})
		c := insertLesson(t, s, store.Memory{Workspace: "/w", Text: "pin node"})
		l1 := store.Link{FromID: a, ToID: b, Kind: "condition", Note: "CI differs", RecordedAt: taskT0, JobID: 5, TaskID: "task-1"}
		id1, err := s.InsertLink(ctx, s.DB, l1)
		if err != nil {
			t.Fatal(err)
		}
		id2, err := s.InsertLink(ctx, s.DB, store.Link{FromID: c, ToID: b, Kind: "apparent", RecordedAt: taskT0})
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []store.Link{
			{FromID: a, ToID: b, Kind: "opinion", RecordedAt: taskT0},
			{FromID: a, ToID: a, Kind: "goal", RecordedAt: taskT0},
			{FromID: a, ToID: 999, Kind: "goal", RecordedAt: taskT0},
			{FromID: a, ToID: c, Kind: "goal"},
		} {
			if _, err := s.InsertLink(ctx, s.DB, bad); err == nil {
				t.Errorf("inserted %+v", bad)
			}
		}
		got, err := s.ListLinks(ctx, s.DB, []int64{a})
		l1.ID = id1
		if err != nil || len(got) != 1 || got[0] != l1 {
			t.Fatalf("links of a: %+v, %v; want %+v", got, err, l1)
		}
		if got, _ := s.ListLinks(ctx, s.DB, []int64{b}); len(got) != 2 || got[0].ID != id1 || got[1].ID != id2 {
			t.Fatalf("links of b: %+v", got)
		}
		if got, _ := s.ListLinks(ctx, s.DB, nil); len(got) != 2 {
			t.Fatalf("all links: %+v", got)
		}
		if got, _ := s.ListLinks(ctx, s.DB, []int64{}); len(got) != 0 {
			t.Fatalf("links of none: %+v", got)
		}
	})
}

func TestNudges(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			_, _, err := s.LockSession(ctx, tx, "session-1", "/w", taskT0)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var got []bool
		for range 3 {
			ok, err := s.IncrementNudges(ctx, s.DB, "session-1", 2)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ok)
		}
		if fmt.Sprint(got) != "[true true false]" {
			t.Fatalf("nudges served %v; want two then none", got)
		}
		if sess, _ := s.GetSession(ctx, "session-1"); sess.Nudges != 2 {
			t.Fatalf("session nudges %d", sess.Nudges)
		}
		if ok, err := s.IncrementNudges(ctx, s.DB, "session-nope", 2); ok || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown session: %v, %v", ok, err)
		}
	})
}

// Many requests at once for a nudge of one session: exactly max of them
// get one (the increment's condition holds the cap, not a read before it).
func TestNudgesAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			_, _, err := s.LockSession(ctx, tx, "session-1", "/w", taskT0)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		const callers, max = 8, 2
		results := make(chan error, callers)
		served := make(chan bool, callers)
		start := make(chan struct{})
		for range callers {
			go func() {
				<-start
				ok, err := s.IncrementNudges(ctx, s.DB, "session-1", max)
				served <- ok
				results <- err
			}()
		}
		close(start)
		n := 0
		for range callers {
			if err := <-results; err != nil {
				t.Error(err)
			}
			if <-served {
				n++
			}
		}
		if n != max {
			t.Fatalf("%d nudges served at once; want %d", n, max)
		}
	})
}
