package web_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Without lessons or reflections, the pages say where they come from.
func TestPanelLessonsEmpty(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		code, body := e.get(c, "/lessons")
		if code != http.StatusOK || !strings.Contains(body, "No lessons yet") || !strings.Contains(body, "<code>mull dsh install</code>") ||
			!strings.Contains(body, "No reflections yet") || !strings.Contains(body, "Nothing refused yet") {
			t.Fatalf("/lessons: %d\n%s", code, body)
		}
		if code, body := e.get(c, "/lessons/items"); code != http.StatusOK || !strings.Contains(body, "No reflections yet") {
			t.Fatalf("/lessons/items: %d\n%s", code, body)
		}
		for path, want := range map[string]int{"/lessons/L999": http.StatusNotFound, "/lessons/nope": http.StatusBadRequest,
			"/lessons?scope=team": http.StatusBadRequest, "/lessons/items?relation=maybe": http.StatusBadRequest} {
			if code, body := e.get(c, path); code != want || !strings.Contains(body, `class="error"`) {
				t.Errorf("%s: %d, want %d\n%s", path, code, want, body)
			}
		}
	})
}

// After a task's reflection and a retro: the lessons by scope (the
// operator's, the reflection's failure and the retro's free-text lesson
// are all the workspace's) with their precedent
// (the revised-at lesson was in force for the failed task: a
// counterexample), the relation distribution, the refusal with its check
// and reason, the items list filtered, and a lesson's page with what
// lessons_lookup answers the agent.
func TestPanelLessonsWithData(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		l := e.learntSession(t)
		c := e.httpClient(true)

		code, body := e.get(c, "/lessons")
		if code != http.StatusOK {
			t.Fatalf("/lessons: %d\n%s", code, body)
		}
		target := regexp.MustCompile(fmt.Sprintf(`(?s)<tr>\s*<td><a href="/lessons/%d">L%d</a>.*?</tr>`, l.Target, l.Target)).FindString(body)
		if !strings.Contains(target, `class="bad">1</a>`) || !strings.Contains(target, "round the invoice total once") {
			t.Errorf("the target's row %q: want its one counterexample", target)
		}
		for _, want := range []string{fmt.Sprintf(`href="/lessons/%d">L%d</a>`, l.Failure, l.Failure),
			`href="/lessons?scope=workspace">3</a>`, `href="/lessons/items?relation=revise&amp;state=refused" class="bad">1</a>`,
			`href="/lessons/items?relation=new&amp;state=accepted">1</a>`, "<code>no_evidence</code>", "#task-" + l.Task} {
			if !strings.Contains(body, want) {
				t.Errorf("/lessons lacks %s", want)
			}
		}
		if t.Failed() {
			t.Logf("/lessons:\n%s", body)
		}
		if code, body := e.get(c, "/lessons?scope=global"); code != http.StatusOK || !strings.Contains(body, "No lesson matches") {
			t.Errorf("/lessons?scope=global: %d\n%s", code, body)
		}

		code, body = e.get(c, "/lessons/items?state=refused")
		if code != http.StatusOK || strings.Count(body, `<tr class="bad">`) != 1 || !strings.Contains(body, "no_evidence") {
			t.Errorf("/lessons/items?state=refused: %d\n%s", code, body)
		}
		code, body = e.get(c, "/lessons/items?relation=new")
		if code != http.StatusOK || !strings.Contains(body, fmt.Sprintf(`<ins>added</ins> <a href="/lessons/%d">`, l.Failure)) || strings.Contains(body, "no_evidence") {
			t.Errorf("/lessons/items?relation=new: %d\n%s", code, body)
		}

		code, body = e.get(c, fmt.Sprintf("/lessons/L%d", l.Failure))
		if code != http.StatusOK || !strings.Contains(body, `<pre class="lookup">`) || !strings.Contains(body, "SOURCE TASK "+l.Task) ||
			!strings.Contains(body, learntGoal) || !strings.Contains(body, "changing the discount formula without running its test") {
			t.Errorf("lesson page: %d\n%s", code, body)
		}
		code, body = e.get(c, fmt.Sprintf("/lessons/%d", l.Target))
		if code != http.StatusOK || !strings.Contains(body, "no_evidence") || !strings.Contains(body, "lessons_lookup(") {
			t.Errorf("target's page: %d\n%s", code, body)
		}
	})
}
