package memories_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// addLesson stores a structured lesson the way every lesson writer must
// (lesson.New: the trust gate field by field, Text = lesson.Line).
func addLesson(t *testing.T, s *store.Store, m memory.Memory) memory.Memory {
	t.Helper()
	m.Origin = memory.OriginPanel
	if m.Lesson.Boundary == "" && m.Scope != memory.LessonReflection {
		m.Lesson.Boundary = "written by the test"
	}
	m, _, err := lesson.New(m, s.Now())
	if err != nil {
		t.Fatalf("lesson %+v: %v", m.Lesson, err)
	}
	if m.ID, err = s.InsertMemory(context.Background(), s.DB, memories.ToRow(m)); err != nil {
		t.Fatal(err)
	}
	return m
}

func wsLesson(ws, problem string) memory.Memory {
	return memory.Memory{Kind: memory.Lesson, Scope: memory.LessonWorkspace, Workspace: ws,
		Lesson: &memory.LessonFields{Problem: problem, Correction: "the fix for " + problem}}
}

func sessionLesson(ws, session, problem string) memory.Memory {
	return memory.Memory{Kind: memory.Lesson, Scope: memory.LessonSession, Workspace: ws, ScopeSession: session,
		Lesson: &memory.LessonFields{Problem: problem, Correction: "the fix for " + problem}}
}

func digestFor(t *testing.T, svc *memories.Service, ws, session string) memories.Digest {
	t.Helper()
	d, err := svc.DigestFor(context.Background(), ws, session)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A failure lesson is shown under Known failures with the seed's
// constraint header; a session-scoped lesson only in its own session's
// digest, and a new one is a notice to that session alone.
func TestDigestLessonsBySession(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, _ := newService(t, s, "workspace")
		remember(t, svc, "/w", memory.Fact, "the build uses make")
		f := addLesson(t, s, memory.Memory{Kind: memory.Failure, Scope: memory.LessonWorkspace, Workspace: "/w",
			Lesson: &memory.LessonFields{Problem: "the release broke", Avoid: "editing a released migration", Instead: "add a new numbered one"}})
		own := addLesson(t, s, sessionLesson("/w", "s1", "session one works on the parser"))
		w := addLesson(t, s, wsLesson("/w", "go vet was skipped"))

		d1 := digestFor(t, svc, "/w", "s1")
		failures := "#### Known failures\n" +
			"Actions that produced a bad outcome. When the trigger matches, do not do this.\n" +
			"Unlike a lesson, this is not a heuristic to weigh — it is a constraint.\n" +
			"- " + lesson.LessonRef(f.ID) + " (workspace) avoid: editing a released migration\n  instead: add a new numbered one"
		for _, want := range []string{failures, "#### Lessons: this workspace\n- " + lesson.LessonRef(w.ID) + " go vet was skipped",
			"#### Lessons: this session\n- " + lesson.LessonRef(own.ID) + " session one works on the parser"} {
			if !strings.Contains(d1.Text, want) {
				t.Fatalf("session s1's digest lacks %q:\n%s", want, d1.Text)
			}
		}
		if strings.Index(d1.Text, "Known failures") > strings.Index(d1.Text, "Lessons: this workspace") {
			t.Errorf("Known failures not first:\n%s", d1.Text)
		}
		ws := digestFor(t, svc, "/w", "")
		s2 := digestFor(t, svc, "/w", "s2")
		if strings.Contains(ws.Text, "parser") || s2.Text != ws.Text || s2.ETag != ws.ETag || !strings.Contains(ws.Text, failures) {
			t.Fatalf("a session lesson reached another session:\nworkspace:\n%s\ns2:\n%s", ws.Text, s2.Text)
		}
		if again := digestFor(t, svc, "/w", "s1"); again.Text != d1.Text || again.ETag != d1.ETag || again.Watermark != ws.Watermark {
			t.Fatalf("s1's digest changed between watermarks:\n%s", again.Text)
		}

		// A new session lesson waits behind the watermark, a notice to its
		// session only.
		late := addLesson(t, s, sessionLesson("/w", "s1", "session one renamed the lexer"))
		if again := digestFor(t, svc, "/w", "s1"); again.Text != d1.Text {
			t.Fatalf("one new lesson changed s1's digest:\n%s", again.Text)
		}
		for session, want := range map[string]int{"s1": 1, "s2": 0, "": 0} {
			n, err := svc.NoticesFor(ctx, "/w", session, 0)
			if err != nil || len(n.Notices) != want || n.Cursor != late.ID {
				t.Fatalf("notices for %q: %+v, %v; want %d", session, n, err, want)
			}
			if want == 1 && (n.Notices[0].Kind != memory.Lesson || n.Notices[0].Text != late.Text) {
				t.Fatalf("notice %+v; want the lesson's one-line text %q", n.Notices[0], late.Text)
			}
		}
	})
}

// New lessons batch by lessons.commit_every (the seed's 8), apart from
// digest.watermark_items (5), which counts the other memories: seven
// lessons and four facts keep the digest byte-identical, each a notice;
// the eighth lesson publishes. Under commit_every 9, eight do not.
func TestDigestLessonsCommitEvery(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, _ := newService(t, s, "workspace")
		remember(t, svc, "/w", memory.Fact, "the build uses make")
		d0 := digestFor(t, svc, "/w", "s1")
		var last memory.Memory
		for i := range 7 {
			last = addLesson(t, s, wsLesson("/w", fmt.Sprintf("lesson number %d", i)))
		}
		for i := range 4 {
			remember(t, svc, "/w", memory.Fact, fmt.Sprintf("fact number %d", i))
		}
		if d := digestFor(t, svc, "/w", "s1"); d.Text != d0.Text || d.ETag != d0.ETag {
			t.Fatalf("7 lessons and 4 facts changed the digest:\n%s", d.Text)
		}
		n, err := svc.NoticesFor(ctx, "/w", "s1", 0)
		kinds := map[memory.Kind]int{}
		for _, x := range n.Notices {
			kinds[x.Kind]++
		}
		if err != nil || kinds[memory.Lesson] != 7 || kinds[memory.Fact] != 4 || !strings.Contains(last.Text, "lesson number 6 → the fix") {
			t.Fatalf("notices: %v %v", kinds, err)
		}
		eighth := addLesson(t, s, wsLesson("/w", "lesson number 7"))
		d8 := digestFor(t, svc, "/w", "s1")
		if d8.ETag == d0.ETag || d8.Watermark != eighth.ID || !strings.Contains(d8.Text, "lesson number 7") || !strings.Contains(d8.Text, "lesson number 0") {
			t.Fatalf("the 8th lesson did not publish:\n%s", d8.Text)
		}
		if n, _ := svc.NoticesFor(ctx, "/w", "s1", 0); len(n.Notices) != 0 {
			t.Fatalf("published lessons are still notices: %+v", n)
		}

		nine := svc.WithLessons(config.Lessons{CommitEvery: 9}, config.Reflection{})
		remember(t, nine, "/nine", memory.Fact, "the build uses make")
		e0 := digestFor(t, nine, "/nine", "")
		for i := range 8 {
			addLesson(t, s, wsLesson("/nine", fmt.Sprintf("lesson number %d", i)))
		}
		if d := digestFor(t, nine, "/nine", ""); d.ETag != e0.ETag {
			t.Fatal("8 lessons published under commit_every 9")
		}
		addLesson(t, s, wsLesson("/nine", "lesson number 8"))
		if d := digestFor(t, nine, "/nine", ""); d.ETag == e0.ETag {
			t.Fatal("9 lessons did not publish under commit_every 9")
		}
	})
}

// envOf is a task's decision environment holding lesson ids, detailed.
func envOf(ids ...int64) string {
	var ls []string
	for _, id := range ids {
		ls = append(ls, fmt.Sprintf(`{"id":%d,"kind":"lesson","scope":"workspace","problem":"p%d"}`, id, id))
	}
	return fmt.Sprintf(`{"taken_at":"2026-11-29T12:00:00Z","committed_at":"2026-11-29T12:00:00Z","count":%d,"truncated":false,"lessons":[%s],"omitted":[]}`,
		len(ls), strings.Join(ls, ","))
}

func task(t *testing.T, s *store.Store, id, status string, lessons ...int64) {
	t.Helper()
	ctx := context.Background()
	if err := s.InsertTask(ctx, s.DB, store.Task{ID: id, Kind: store.TaskKindTask, SessionID: "s1", Workspace: "/w",
		Goal: "goal", Expected: "tests pass", OpenedAt: s.Now(), OpenSeq: 1, Environment: envOf(lessons...)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CloseTask(ctx, s.DB, id, store.TaskClose{Status: status, Result: "r", At: s.Now(), CloseSeq: 2, ReflectMode: "job"}); err != nil {
		t.Fatal(err)
	}
}

// With reflection.precedent_in_prompt on (the default) a lesson shows the
// seed's precedent line, counted as of the publication: a task closed
// since changes nothing until the next one. Off, no line.
func TestDigestLessonsPrecedent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		svc, c := newService(t, s, "workspace")
		on := addLesson(t, s, wsLesson("/w", "the cache was stale"))
		off := addLesson(t, s, wsLesson("/off", "the cache was stale"))
		for i, st := range []string{store.TaskSucceeded, store.TaskSucceeded, store.TaskFailed, store.TaskAbandoned} {
			task(t, s, fmt.Sprintf("task-%d", i), st, on.ID, off.ID)
		}
		c.add(time.Minute)
		d := digestFor(t, svc, "/w", "")
		line := "- " + lesson.LessonRef(on.ID) + " the cache was stale\n  do instead: the fix for the cache was stale\n  Precedent: verified 2x, 1 counterexample(s)"
		if !strings.Contains(d.Text, line) {
			t.Fatalf("no precedent line:\n%s", d.Text)
		}
		c.add(time.Minute)
		task(t, s, "task-late", store.TaskSucceeded, on.ID)
		if again := digestFor(t, svc, "/w", ""); again.Text != d.Text {
			t.Fatalf("a task closed after publication changed the digest:\n%s", again.Text)
		}

		no := false
		quiet := svc.WithLessons(config.Lessons{}, config.Reflection{PrecedentInPrompt: &no})
		if d := digestFor(t, quiet, "/off", ""); strings.Contains(d.Text, "Precedent:") || !strings.Contains(d.Text, "the cache was stale") {
			t.Fatalf("precedent_in_prompt off:\n%s", d.Text)
		}
	})
}

// Declared conflicts between two lessons in force are shown side by side
// under [CONFLICTS]; a conflict declared after the publication waits for
// the next one.
func TestDigestLessonsConflicts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, c := newService(t, s, "workspace")
		a := addLesson(t, s, wsLesson("/w", "tabs in the Makefile"))
		b := addLesson(t, s, wsLesson("/w", "spaces in the YAML"))
		if _, err := s.InsertLink(ctx, s.DB, store.Link{FromID: a.ID, ToID: b.ID, Kind: "condition", Note: "file types differ", RecordedAt: s.Now()}); err != nil {
			t.Fatal(err)
		}
		d := digestFor(t, svc, "/w", "")
		want := "#### [CONFLICTS] The lessons below were declared to conflict. Nothing was adjudicated:\n" +
			"judge which one's condition holds here, and say why you follow the one you do.\n" +
			"- " + lesson.LessonRef(a.ID) + " vs " + lesson.LessonRef(b.ID) + " (condition: they apply under different conditions)\n" +
			"  " + lesson.LessonRef(a.ID) + ": " + a.Text + "\n  " + lesson.LessonRef(b.ID) + ": " + b.Text + "\n  note: file types differ"
		if !strings.Contains(d.Text, want) {
			t.Fatalf("conflict not side by side:\n%s", d.Text)
		}
		c.add(time.Minute)
		if _, err := s.InsertLink(ctx, s.DB, store.Link{FromID: b.ID, ToID: a.ID, Kind: "goal", RecordedAt: s.Now()}); err != nil {
			t.Fatal(err)
		}
		if again := digestFor(t, svc, "/w", ""); again.Text != d.Text {
			t.Fatalf("a conflict declared after publication changed the digest:\n%s", again.Text)
		}
	})
}

// A free-text lesson from before the lesson model is shown by its text, in
// its library's block: the global library's only where memory.scope serves
// that library (both), as before the lesson model.
func TestDigestLegacyLessons(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		both, _ := newService(t, s, "both")
		remember(t, both, "/w", memory.Lesson, "the workspace's old free-text lesson")
		remember(t, both, "", memory.Lesson, "the global library's old free-text lesson")
		d := digestFor(t, both, "/w", "")
		for _, want := range []string{"#### Lessons: global (every session)\n- L", "the global library's old free-text lesson",
			"#### Lessons: this workspace\n- L", "the workspace's old free-text lesson"} {
			if !strings.Contains(d.Text, want) {
				t.Fatalf("scope both lacks %q:\n%s", want, d.Text)
			}
		}
		ws, _ := newService(t, s, "workspace")
		if d := digestFor(t, ws, "/w", ""); strings.Contains(d.Text, "global library's old") || !strings.Contains(d.Text, "workspace's old") {
			t.Fatalf("scope workspace:\n%s", d.Text)
		}
	})
}
