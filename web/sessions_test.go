package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Without sessions, the pages say how to get some.
func TestPanelSessionsEmpty(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		code, body := e.get(c, "/sessions")
		if code != http.StatusOK || !strings.Contains(body, "No sessions yet") || !strings.Contains(body, "<code>mull dsh install</code>") ||
			!strings.Contains(body, "<code>mull import dsh</code>") {
			t.Fatalf("/sessions: %d\n%s", code, body)
		}
		if code, body := e.get(c, "/workspaces"); code != http.StatusOK || !strings.Contains(body, "No workspaces yet") {
			t.Fatalf("/workspaces: %d\n%s", code, body)
		}
		if code, body := e.get(c, "/sessions?workspace=/nowhere"); code != http.StatusOK || !strings.Contains(body, "No sessions match") {
			t.Fatalf("filtered: %d\n%s", code, body)
		}
		if code, body := e.get(c, "/sessions/session-nope"); code != http.StatusNotFound || !strings.Contains(body, `class="error"`) ||
			!strings.Contains(body, "session-nope") {
			t.Fatalf("unknown session: %d\n%s", code, body)
		}
		if code, body := e.get(c, "/sessions?status=gone"); code != http.StatusBadRequest || !strings.Contains(body, "status") {
			t.Fatalf("bad status: %d\n%s", code, body)
		}
	})
}

// A session mull learnt from: listed with its counts under its workspace;
// its page shows the timeline with the failed tool call highlighted, the
// task and its reflection (a failure added, a revise refused by the
// precedent gate), the retro and what it added, and the LLM calls of both
// jobs linking to /llm/{id}.
func TestPanelSessionsWithData(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		l := e.learntSession(t)
		c := e.httpClient(true)

		code, body := e.get(c, "/sessions")
		if code != http.StatusOK {
			t.Fatalf("/sessions: %d\n%s", code, body)
		}
		for _, want := range []string{`href="/sessions/` + l.Session + `"`, "Fix the invoice discount", `href="/sessions?workspace=%2Fw%2Finvoices"`,
			`href="/memories?workspace=%2Fw%2Finvoices"`, `href="/sessions/` + l.Session + `?only=failures#timeline">1</a>`, ">ended<"} {
			if !strings.Contains(body, want) {
				t.Errorf("/sessions lacks %s", want)
			}
		}
		if code, body := e.get(c, "/sessions?workspace=/w/invoices&status=ended"); code != http.StatusOK || !strings.Contains(body, l.Session) {
			t.Fatalf("filtered: %d\n%s", code, body)
		}
		if code, body := e.get(c, "/sessions?status=open"); code != http.StatusOK || strings.Contains(body, `href="/sessions/`+l.Session+`"`) {
			t.Fatalf("open sessions list the ended one: %d\n%s", code, body)
		}
		if code, body := e.get(c, "/workspaces"); code != http.StatusOK || !strings.Contains(body, ">/w/invoices<") {
			t.Fatalf("/workspaces: %d\n%s", code, body)
		}

		code, body = e.get(c, "/sessions/"+l.Session)
		if code != http.StatusOK {
			t.Fatalf("session page: %d\n%s", code, body)
		}
		bad := regexp.MustCompile(`(?s)<tr id="event-\d+" class="bad">.*?</tr>`).FindAllString(body, -1)
		if len(bad) != 1 || !strings.Contains(bad[0], "go test ./invoice") || !strings.Contains(bad[0], "exit 1") {
			t.Errorf("highlighted rows %q; want the failed go test only", bad)
		}
		for _, want := range []string{learntGoal, `id="task-` + l.Task + `"`, "<code>no_evidence</code>",
			fmt.Sprintf(`<ins>added</ins> <a href="/memories/%d">L%d</a>`, l.Failure, l.Failure),
			fmt.Sprintf(`revise <a href="/memories/%d">L%d</a>`, l.Target, l.Target),
			fmt.Sprintf(`id="retro-%d"`, l.RetroJob), "retro_session", "reflect_task", `href="/llm/call_`,
			"the discount test still fails", "fake-deepseek reviewed this session"} {
			if !strings.Contains(body, want) {
				t.Errorf("session page lacks %s", want)
			}
		}
		if t.Failed() {
			t.Logf("session page:\n%s", body)
		}

		code, body = e.get(c, "/sessions/"+l.Session+"?only=failures")
		if code != http.StatusOK || !strings.Contains(body, "1 events match") || strings.Contains(body, "The discount divides by 10") {
			t.Fatalf("failures only: %d\n%s", code, body)
		}
		if code, body := e.get(c, "/sessions/"+l.Session+"?from=x"); code != http.StatusBadRequest || !strings.Contains(body, "from=") {
			t.Fatalf("bad from: %d\n%s", code, body)
		}
	})
}

// Long lists are paged: a session's timeline 100 events a page, the
// sessions 50 a page; a page past the end says so; a visitor not logged
// in is sent to log in.
func TestPanelSessionsPaged(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		start := time.Now().Add(-time.Hour)
		var evs []events.Event
		for i := range 130 {
			evs = append(evs, events.Event{ID: fmt.Sprintf("long-%d", i), Type: events.UserMessage, SessionID: "session-long",
				Workspace: "/w/long", Time: start.Add(time.Duration(i) * time.Second), Payload: json.RawMessage(fmt.Sprintf(`{"text":"message %d"}`, i))})
		}
		for i := range 55 {
			evs = append(evs, events.Event{ID: fmt.Sprintf("short-%d", i), Type: events.SessionStart, SessionID: fmt.Sprintf("session-short-%02d", i),
				Workspace: "/w/short", Time: start.Add(time.Duration(i) * time.Second)})
		}
		e.ingestEvents(t, evs...)
		c := e.httpClient(true)

		code, body := e.get(c, "/sessions/session-long")
		if code != http.StatusOK || strings.Count(body, `<tr id="event-`) != 100 || !strings.Contains(body, "130 events match") ||
			!strings.Contains(body, `href="/sessions/session-long?page=2" rel="next"`) || !strings.Contains(body, "message 99<") {
			t.Fatalf("page 1: %d\n%s", code, body)
		}
		code, body = e.get(c, "/sessions/session-long?page=2")
		if code != http.StatusOK || strings.Count(body, `<tr id="event-`) != 30 || !strings.Contains(body, `rel="prev"`) || strings.Contains(body, `rel="next"`) {
			t.Fatalf("page 2: %d\n%s", code, body)
		}
		code, body = e.get(c, "/sessions?workspace=/w/short")
		if code != http.StatusOK || strings.Count(body, `<td><a href="/sessions/session-short-`) != 50 || !strings.Contains(body, `rel="next"`) {
			t.Fatalf("sessions page 1: %d\n%s", code, body)
		}
		code, body = e.get(c, "/sessions?workspace=/w/short&page=2")
		if code != http.StatusOK || strings.Count(body, `<td><a href="/sessions/session-short-`) != 5 || !strings.Contains(body, "session-short-00") {
			t.Fatalf("sessions page 2: %d\n%s", code, body)
		}
		if code, body := e.get(c, "/sessions?page=9"); code != http.StatusOK || !strings.Contains(body, "No sessions match") {
			t.Fatalf("past the end: %d\n%s", code, body)
		}
		res, err := e.httpClient(false).Get(e.URL + "/sessions/session-long")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther && res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("anonymous: %d", res.StatusCode)
		}
	})
}
