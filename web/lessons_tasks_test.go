package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// precedentFixture is a session of /w/links whose tasks had lessons A and
// B in force: A's verified (2), counterexamples (1) and exposures (4: an
// abandoned task too) all differ, and so do B's (1, 1, 2); an open task
// and a turn had A in force too and count for nothing.
type precedentFixture struct {
	Session string
	A, B    int64
}

func (e *env) precedentFixture(t *testing.T) precedentFixture {
	t.Helper()
	ctx := context.Background()
	f := precedentFixture{Session: "session-links-1"}
	const ws = "/w/links"
	start := time.Now().Add(-time.Hour)
	raw, _ := json.Marshal(events.SessionStartPayload{Title: "Links"})
	e.ingestEvents(t, events.Event{ID: f.Session + "-1", Type: events.SessionStart, SessionID: f.Session, Workspace: ws, Time: start, Payload: raw})
	add := func(problem string) int64 {
		t.Helper()
		w, err := e.Mem.AddLesson(ctx, memories.LessonWrite{Kind: memory.Lesson, Scope: memory.LessonWorkspace, Workspace: ws,
			Fields: memory.LessonFields{Problem: problem, Correction: "do it the other way", Confidence: memory.ConfidenceHigh,
				Boundary: "this repo"}}, memory.Provenance{Origin: memory.OriginPanel})
		if err != nil {
			t.Fatal(err)
		}
		return w.Memory.ID
	}
	f.A, f.B = add("the build cache went stale"), add("the linter ran on vendored code")
	for i, c := range []struct {
		id, status string
		lessons    []int64
		kind       string
	}{
		{"task-l1", store.TaskSucceeded, []int64{f.A, f.B}, store.TaskKindTask},
		{"task-l2", store.TaskSucceeded, []int64{f.A}, store.TaskKindTask},
		{"task-l3", store.TaskFailed, []int64{f.A, f.B}, store.TaskKindTask},
		{"task-l4", store.TaskAbandoned, []int64{f.A}, store.TaskKindTask},
		{"task-l5", store.TaskOpen, []int64{f.A}, store.TaskKindTask},
		{"turn-l6", store.TaskSucceeded, []int64{f.A}, store.TaskKindTurn},
	} {
		var ls []string
		for _, id := range c.lessons {
			ls = append(ls, fmt.Sprintf(`{"id":%d,"kind":"lesson","scope":"workspace","confidence":"high","problem":"p%d"}`, id, id))
		}
		environment := fmt.Sprintf(`{"taken_at":"2026-12-01T09:00:00Z","committed_at":"2026-12-01T08:00:00Z","count":%d,"truncated":false,"lessons":[%s],"omitted":[]}`,
			len(ls), strings.Join(ls, ","))
		at := start.Add(time.Duration(i+1) * time.Minute)
		if err := e.S.InsertTask(ctx, e.S.DB, store.Task{ID: c.id, Kind: c.kind, SessionID: f.Session, Workspace: ws,
			Goal: "goal of " + c.id, OpenedAt: at, OpenSeq: 1, Environment: environment}); err != nil {
			t.Fatal(err)
		}
		if c.status == store.TaskOpen {
			continue
		}
		if _, err := e.S.CloseTask(ctx, e.S.DB, c.id, store.TaskClose{Status: c.status, Result: "result of " + c.id,
			At: at.Add(30 * time.Second), CloseSeq: 1, ReflectMode: "agent"}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// followCounts follows every link numbers matches in body (its groups:
// the href, then the number) and checks the page it leads to lists as
// many rows (matches of row) as the number says. It returns how many
// links it followed.
func (e *env) followCounts(t *testing.T, c *http.Client, page, body string, numbers, row *regexp.Regexp) int {
	t.Helper()
	ms := numbers.FindAllStringSubmatch(body, -1)
	for _, m := range ms {
		href := html.UnescapeString(m[1])
		want, err := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
		if err != nil {
			t.Fatalf("%s: %q is not a number", page, m[2])
		}
		code, list := e.get(c, strings.SplitN(href, "#", 2)[0])
		if got := len(row.FindAllString(list, -1)); code != http.StatusOK || got != want {
			t.Errorf("%s: %s says %d, lists %d (status %d)", page, href, want, got, code)
		}
	}
	return len(ms)
}

// Every precedent count links to the tasks behind it, and a task's
// lessons in force to those lessons: each list has as many rows as its
// count says.
func TestPanelPrecedentLinks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		f := e.precedentFixture(t)
		c := e.httpClient(true)
		taskRow := regexp.MustCompile(`<tr id="task-`)
		for _, id := range []int64{f.A, f.B} {
			base := fmt.Sprintf("/lessons/%d/tasks", id)
			cards := regexp.MustCompile(`<a class="big[^"]*" href="(` + regexp.QuoteMeta(base) + `[^"]*)">([0-9,]+)</a>`)
			page := fmt.Sprintf("/lessons/%d", id)
			_, body := e.get(c, page)
			if n := e.followCounts(t, c, page, body, cards, taskRow); n != 3 {
				t.Errorf("%s: %d precedent links, want 3\n%s", page, n, body)
			}
			page = fmt.Sprintf("/memories/%d", id)
			_, body = e.get(c, page)
			inline := regexp.MustCompile(`<a href="(` + regexp.QuoteMeta(base) + `[^"]*)">([0-9,]+) [a-z ]+</a>`)
			if n := e.followCounts(t, c, page, body, inline, taskRow); n != 3 {
				t.Errorf("%s: %d precedent links, want 3\n%s", page, n, body)
			}
		}
		_, body := e.get(c, "/lessons?workspace=/w/links")
		cells := regexp.MustCompile(`<td class="num"><a href="(/lessons/[0-9]+/tasks[^"]*)"[^>]*>([0-9,]+)</a></td>`)
		if n := e.followCounts(t, c, "/lessons", body, cells, taskRow); n != 6 {
			t.Errorf("/lessons: %d precedent links, want 6\n%s", n, body)
		}
		// The counts themselves: A's are 2, 1 and 4.
		_, body = e.get(c, fmt.Sprintf("/lessons/%d", f.A))
		for _, want := range []string{fmt.Sprintf(`href="/lessons/%d/tasks?status=succeeded">2</a>`, f.A),
			fmt.Sprintf(`href="/lessons/%d/tasks?status=failed">1</a>`, f.A), fmt.Sprintf(`href="/lessons/%d/tasks">4</a>`, f.A)} {
			if !strings.Contains(body, want) {
				t.Errorf("lesson A lacks %s", want)
			}
		}

		page := "/sessions/" + f.Session
		_, body = e.get(c, page)
		inForce := regexp.MustCompile(`<a href="(/lessons\?task=[^"]+)#list">([0-9,]+) lessons in force</a>`)
		lessonRow := regexp.MustCompile(`<br><a class="small" href="/memories/`)
		if n := e.followCounts(t, c, page, body, inForce, lessonRow); n != 5 {
			t.Errorf("%s: %d lessons-in-force links, want one per closed task\n%s", page, n, body)
		}
		if !strings.Contains(body, `<a href="/lessons?task=task-l5#list">the lessons in force</a>`) {
			t.Errorf("%s: the open task's lessons in force are not linked\n%s", page, body)
		}
		if code, body := e.get(c, "/lessons?task=task-l5"); code != http.StatusOK || len(lessonRow.FindAllString(body, -1)) != 1 ||
			!strings.Contains(body, "The lessons in force at the start of task") {
			t.Errorf("the open task's lessons: %d\n%s", code, body)
		}
		if code, body := e.get(c, fmt.Sprintf("/lessons/%d/tasks", f.A)); code != http.StatusOK ||
			strings.Contains(body, "task-l5") || strings.Contains(body, "turn-l6") || !strings.Contains(body, `<tr id="task-task-l3" class="bad">`) {
			t.Errorf("A's exposures: %d\n%s", code, body)
		}
	})
}

// A lesson's tasks page: its empty state, and bad input in place.
func TestPanelLessonTasksEmptyAndErrors(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		f := e.precedentFixture(t)
		c := e.httpClient(true)
		if code, body := e.get(c, fmt.Sprintf("/lessons/%d/tasks?status=aborted", f.A)); code != http.StatusOK ||
			!strings.Contains(body, "No closed task with this outcome") {
			t.Errorf("no aborted task: %d\n%s", code, body)
		}
		for path, want := range map[string]int{"/lessons/L999/tasks": http.StatusNotFound, "/lessons/nope/tasks": http.StatusBadRequest,
			fmt.Sprintf("/lessons/%d/tasks?status=open", f.A): http.StatusBadRequest} {
			if code, body := e.get(c, path); code != want || !strings.Contains(body, `class="error"`) {
				t.Errorf("%s: %d, want %d\n%s", path, code, want, body)
			}
		}
		// A visitor without the admin cookie is sent to log in, as on
		// every panel page, and sees no task.
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/lessons/%d/tasks?status=failed", e.URL, f.A), nil)
		req.Header.Set("Accept", "text/html")
		res, err := e.httpClient(false).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		anon, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if loc, want := res.Header.Get("Location"), fmt.Sprintf("/login?next=/lessons/%d/tasks%%3Fstatus%%3Dfailed", f.A); res.StatusCode != http.StatusSeeOther ||
			loc != want || strings.Contains(string(anon), "task-l3") {
			t.Fatalf("anonymous: %d to %q, want 303 to %q\n%s", res.StatusCode, loc, want, anon)
		}
		// The lessons in force of a task mull does not have: 404, naming it.
		e.wantRefused(t, c, http.StatusNotFound, "/lessons?task=task-nope", "mull has no task", "task-nope")
		// A memory that is not a lesson has no tasks: 404, naming it.
		storetest.Memories(t, s, "/w/links", 0, 1, time.Now())
		var fact int64
		if err := s.DB.QueryRow(`select max(id) from memories where kind = 'fact'`).Scan(&fact); err != nil {
			t.Fatal(err)
		}
		e.wantRefused(t, c, http.StatusNotFound, fmt.Sprintf("/lessons/%d/tasks", fact),
			fmt.Sprintf("memory %d is a fact, not a structured lesson", fact))
	})
}
