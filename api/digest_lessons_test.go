package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func storeLesson(t *testing.T, s *store.Store, m memory.Memory) memory.Memory {
	t.Helper()
	m.Origin = memory.OriginPanel
	m, _, err := lesson.New(m, s.Now())
	if err != nil {
		t.Fatal(err)
	}
	if m.ID, err = s.InsertMemory(context.Background(), s.DB, memories.ToRow(m)); err != nil {
		t.Fatal(err)
	}
	return m
}

// GET /v1/digest and /v1/notices read session: a session-scoped lesson is
// in its session's digest and notices only.
func TestDigestAndNoticesBySession(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := memoryServer(t, s, apiToken)
		auth := bearer(apiToken)
		session := func(id, problem string) memory.Memory {
			return storeLesson(t, s, memory.Memory{Kind: memory.Failure, Scope: memory.LessonSession, Workspace: "/w", ScopeSession: id,
				Lesson: &memory.LessonFields{Problem: problem, Avoid: "running " + problem + " again", Boundary: "this session"}})
		}
		session("session-1", "the parser test")
		var one, two, ws digestBody
		expect(t, serve(srv, "GET", "/v1/digest?workspace=/w&session=session-1", "", auth), http.StatusOK, &one)
		expect(t, serve(srv, "GET", "/v1/digest?workspace=/w&session=session-2", "", auth), http.StatusOK, &two)
		expect(t, serve(srv, "GET", "/v1/digest?workspace=/w", "", auth), http.StatusOK, &ws)
		if !strings.Contains(one.Text, "#### Known failures") || !strings.Contains(one.Text, "avoid: running the parser test again") {
			t.Fatalf("session-1's digest lacks its failure:\n%s", one.Text)
		}
		if strings.Contains(two.Text, "parser") || two.ETag != ws.ETag || one.ETag == ws.ETag || one.Watermark != ws.Watermark {
			t.Fatalf("a session lesson reached another session: %+v %+v", two, ws)
		}

		late := session("session-1", "the lexer test")
		var n memories.Notices
		expect(t, serve(srv, "GET", "/v1/notices?workspace=/w&session=session-1&after=0", "", auth), http.StatusOK, &n)
		if len(n.Notices) != 1 || n.Notices[0].ID != late.ID || n.Notices[0].Kind != memory.Failure || n.Notices[0].Text != late.Text {
			t.Fatalf("session-1's notices: %+v", n)
		}
		expect(t, serve(srv, "GET", "/v1/notices?workspace=/w&session=session-2&after=0", "", auth), http.StatusOK, &n)
		if len(n.Notices) != 0 || n.Cursor != late.ID {
			t.Fatalf("session-2's notices: %+v", n)
		}
	})
}

// The agent's invalidate tool cannot retire a structured lesson: that is a
// revise through the precedent gate, or an operator's deprecate or remove.
func TestInvalidateRefusesALesson(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := memoryServer(t, s, apiToken)
		auth := bearer(apiToken)
		l := storeLesson(t, s, memory.Memory{Kind: memory.Lesson, Scope: memory.LessonWorkspace, Workspace: "/w",
			Lesson: &memory.LessonFields{Problem: "the release script was run by hand", Correction: "run scripts/release.sh from CI, never from a laptop", Boundary: "this repository"}})
		var e struct{ Error string }
		expect(t, serve(srv, "POST", "/v1/memories/"+strconv.FormatInt(l.ID, 10)+"/invalidate", `{"reason":"no longer true"}`, auth), http.StatusConflict, &e)
		if !strings.Contains(e.Error, "precedent gate") {
			t.Fatalf("409 body %q does not say how a lesson changes", e.Error)
		}
		if r, err := s.GetMemory(context.Background(), s.DB, l.ID); err != nil || !r.InvalidAt.IsZero() {
			t.Fatalf("the lesson after a refused invalidate: %+v, %v", r, err)
		}
	})
}
