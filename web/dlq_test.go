package web_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/dlq"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/llmprobe"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/web"
)

// deadLetter makes a real dead letter: an LLM probe whose one call the
// fake DeepSeek refuses with a 400 (a permanent failure: cancelled into
// the dead letters). The script fails only that call, so a retry succeeds.
func (e *env) deadLetter(t *testing.T, marker string) int64 {
	t.Helper()
	if err := e.Fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{
		{Marker: marker, Fault: fakeds.FaultBadRequest, Times: 1, Message: "the request named " + marker},
	}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Client.Insert(context.Background(), llmprobe.Args{Prompt: "probe " + marker}, nil)
	if err != nil {
		t.Fatal(err)
	}
	row := enginetest.WaitFinal(t, e.Events, res.Job.ID)
	if row.State != rivertype.JobStateCancelled {
		t.Fatalf("probe %d ended %s, want cancelled into the dead letters", row.ID, row.State)
	}
	return row.ID
}

// jobState is a job's state now, or "gone".
func (e *env) jobState(t *testing.T, id int64) string {
	t.Helper()
	j, err := e.Client.JobGet(context.Background(), id)
	if errors.Is(err, river.ErrNotFound) {
		return "gone"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(j.State)
}

// postFrom posts a form with the given Sec-Fetch-Site and Origin headers.
func (e *env) postFrom(c *http.Client, path string, form url.Values, site, origin string) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if site != "" {
		req.Header.Set("Sec-Fetch-Site", site)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// The dead letters page lists, shows, and says "nothing failed" when empty.
func TestPanelDeadLettersPages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		code, body := e.get(c, "/dlq")
		if code != http.StatusOK {
			t.Fatalf("/dlq: %d\n%s", code, body)
		}
		wantIn(t, "empty /dlq", body, "Nothing failed")
		id := e.deadLetter(t, "pages-<x>")
		sid := strconv.FormatInt(id, 10)
		_, body = e.get(c, "/dlq")
		wantIn(t, "/dlq", body, `href="/dlq/`+sid+`"`, "llm_probe", ">llm<", "1/3", "the request named pages-&lt;x&gt;",
			`action="/dlq/retry"`, `name="kind" value="llm_probe"`, `href="/dlq/purge"`)
		_, body = e.get(c, "/dlq?kind=other")
		wantIn(t, "filtered /dlq", body, "No dead letter matches")
		code, body = e.get(c, "/dlq/"+sid)
		if code != http.StatusOK {
			t.Fatalf("/dlq/%s: %d\n%s", sid, code, body)
		}
		wantIn(t, "a dead letter", body, "Attempt 1", "the request named pages-&lt;x&gt;", `&#34;prompt&#34;: &#34;probe pages-`,
			`href="/riverui/jobs/`+sid+`"`, "Retry job "+sid)
		for path, want := range map[string]int{"/dlq/999999": 404, "/dlq/x": 400, "/dlq?since=soon": 400, "/dlq/purge?older_than=-1h": 400} {
			if code, body := e.get(c, path); code != want || !strings.Contains(body, `class="error"`) {
				t.Fatalf("%s: %d, want %d in place\n%s", path, code, want, body)
			}
		}
		// Pages: 26 dead letters make two pages of 25 and 1.
		for i := range 25 {
			e.deadLetter(t, "page-"+strconv.Itoa(i))
		}
		_, body = e.get(c, "/dlq")
		if n := strings.Count(body, `<tr><td><a href="/dlq/`); n != 25 || !strings.Contains(body, `rel="next"`) {
			t.Fatalf("first page: %d rows or no next link", n)
		}
		_, body = e.get(c, "/dlq?page=2")
		if n := strings.Count(body, `<tr><td><a href="/dlq/`); n != 1 || !strings.Contains(body, `href="/dlq/`+sid+`"`) {
			t.Fatalf("second page: %d rows, want the oldest one\n%s", n, body)
		}
		// A page past the newest 1000 is refused in place; one past what
		// an int holds is no overflow, and a garbled one is the first.
		for _, page := range []string{"41", "10000", "9223372036854775807"} {
			if code, body := e.get(c, "/dlq?page="+page); code != http.StatusBadRequest || !strings.Contains(body, `class="error"`) ||
				!strings.Contains(body, "newest 1000 dead letters") {
				t.Fatalf("/dlq?page=%s: %d, want 400 in place\n%s", page, code, body)
			}
		}
		if code, body := e.get(c, "/dlq?page=99999999999999999999"); code != http.StatusOK || strings.Count(body, `<tr><td><a href="/dlq/`) != 25 {
			t.Fatalf("/dlq with a page past int: %d\n%s", code, body)
		}
	})
}

// Retry through the form runs the job again and it leaves the dead
// letters; by kind retries them all. Purge shows a dry run first and
// deletes only on the confirmed form. Posts without a login, without the
// CSRF token, or from another site change nothing.
func TestPanelDeadLettersActions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		id := e.deadLetter(t, "act-one")
		sid := strconv.FormatInt(id, 10)
		_, page := e.get(c, "/dlq/"+sid)
		token := csrfToken(t, page)
		retry := url.Values{"csrf": {token}, "id": {sid}, "back": {"/dlq"}}

		refused := []struct {
			name         string
			c            *http.Client
			form         url.Values
			site, origin string
			want         int
		}{
			{"anonymous", e.httpClient(false), retry, "same-origin", "", http.StatusUnauthorized},
			{"no token", c, url.Values{"id": {sid}}, "same-origin", "", http.StatusForbidden},
			{"forged token", c, url.Values{"id": {sid}, "csrf": {"forged"}}, "same-origin", "", http.StatusForbidden},
			{"cross-site", c, retry, "cross-site", "", http.StatusForbidden},
			{"other origin", c, retry, "", "https://evil.example", http.StatusForbidden},
		}
		for _, r := range refused {
			res := e.postFrom(r.c, "/dlq/retry", r.form, r.site, r.origin)
			if res.StatusCode != r.want {
				t.Fatalf("%s retry: %d, want %d", r.name, res.StatusCode, r.want)
			}
			if st := e.jobState(t, id); st != "cancelled" {
				t.Fatalf("%s retry changed the job: %s", r.name, st)
			}
			purge := url.Values{"csrf": r.form["csrf"], "older_than": {"0s"}, "at": {"2099-01-01T00:00:00Z"}}
			if res := e.postFrom(r.c, "/dlq/purge", purge, r.site, r.origin); res.StatusCode != r.want {
				t.Fatalf("%s purge: %d, want %d", r.name, res.StatusCode, r.want)
			}
			if st := e.jobState(t, id); st != "cancelled" {
				t.Fatalf("%s purge changed the job: %s", r.name, st)
			}
		}

		res := e.postForm(c, "/dlq/retry", retry)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/dlq" {
			t.Fatalf("retry: %d to %q", res.StatusCode, res.Header.Get("Location"))
		}
		if row := enginetest.WaitFinal(t, e.Events, id); row.State != rivertype.JobStateCompleted {
			t.Fatalf("retried job ended %s", row.State)
		}
		if _, err := dlq.Get(context.Background(), e.Client, id); !errors.Is(err, dlq.ErrNotDead) {
			t.Fatalf("after the retry the job is still a dead letter: %v", err)
		}
		code, body := e.get(c, "/dlq")
		wantIn(t, "after retry", body, "retried job "+sid, "Nothing failed")
		if code != http.StatusOK {
			t.Fatal(code)
		}

		// By kind: both dead probes run again.
		a, b := e.deadLetter(t, "act-a"), e.deadLetter(t, "act-b")
		res = e.postForm(c, "/dlq/retry", url.Values{"csrf": {token}, "kind": {"llm_probe"}, "back": {"/dlq"}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("retry by kind: %d", res.StatusCode)
		}
		// One wait for both: WaitFinal drops the events of other jobs.
		final := map[int64]rivertype.JobState{}
		enginetest.WaitFor(t, e.Events, func(ev *river.Event) bool {
			switch ev.Job.State {
			case rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
				final[ev.Job.ID] = ev.Job.State
			}
			_, okA := final[a]
			_, okB := final[b]
			return okA && okB
		})
		if final[a] != rivertype.JobStateCompleted || final[b] != rivertype.JobStateCompleted {
			t.Fatalf("jobs retried by kind ended %v", final)
		}
		if res := e.postForm(c, "/dlq/retry", url.Values{"csrf": {token}}); res.StatusCode != http.StatusBadRequest {
			t.Fatalf("retry of nothing: %d", res.StatusCode)
		}

		// Purge: the dry run lists and deletes nothing; the confirmed form deletes.
		old := e.deadLetter(t, "act-purge")
		so := strconv.FormatInt(old, 10)
		code, body = e.get(c, "/dlq/purge?older_than=30d")
		wantIn(t, "dry run 30d", body, "Nothing to purge")
		code, body = e.get(c, "/dlq/purge?older_than=0s")
		if code != http.StatusOK {
			t.Fatalf("dry run: %d\n%s", code, body)
		}
		wantIn(t, "dry run", body, "Dry run: 1 dead letters", `href="/dlq/`+so+`"`, `action="/dlq/purge"`, "data-confirm")
		if st := e.jobState(t, old); st != "cancelled" {
			t.Fatalf("the dry run changed the job: %s", st)
		}
		at := between(body, `name="at" value="`, `"`)
		late := e.deadLetter(t, "act-late") // dies after the dry run: not purged
		res = e.postForm(c, "/dlq/purge", url.Values{"csrf": {csrfToken(t, body)}, "older_than": {"0s"}, "at": {at}, "back": {"/dlq"}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("purge: %d", res.StatusCode)
		}
		if st := e.jobState(t, old); st != "gone" {
			t.Fatalf("purged job is %s", st)
		}
		if st := e.jobState(t, late); st != "cancelled" {
			t.Fatalf("a job that died after the dry run was purged too: %s", st)
		}
		_, body = e.get(c, "/dlq")
		wantIn(t, "after purge", body, "purged 1 dead letters")
		if res := e.postForm(c, "/dlq/purge", url.Values{"csrf": {token}, "older_than": {"0s"}}); res.StatusCode != http.StatusBadRequest {
			t.Fatalf("purge without a dry run time: %d", res.StatusCode)
		}
	})
}

// between is the text of s after start up to end.
func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	return s[:strings.Index(s, end)]
}

// A browser that may read but not act sees no retry or purge form, and its
// posts change nothing. (The api gives no such access today; the panel
// obeys Access whatever decides it.) Without a Health func the overview
// says so instead of failing.
func TestPanelDeadLettersReadOnly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		id := e.deadLetter(t, "read-only")
		sid := strconv.FormatInt(id, 10)
		p, err := web.New(web.Deps{Store: s, Client: e.Client, Config: e.Cfg,
			Access: func(*http.Request) web.Access { return web.Access{Read: true, Why: "a test's read-only visitor"} }})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(p)
		t.Cleanup(ts.Close)
		get := func(path string) string {
			t.Helper()
			res, err := http.Get(ts.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d\n%s", path, res.StatusCode, b)
			}
			return string(b)
		}
		for _, path := range []string{"/dlq", "/dlq/" + sid, "/dlq/purge?older_than=0s"} {
			body := get(path)
			if strings.Contains(body, `method="post" action="/dlq/`) || !strings.Contains(body, "a test&#39;s read-only visitor") {
				t.Fatalf("%s shows forms to a read-only visitor:\n%s", path, body)
			}
		}
		wantIn(t, "overview without health", get("/"), "does not report its health")
		for _, path := range []string{"/dlq/retry", "/dlq/purge"} {
			res, err := http.PostForm(ts.URL+path, url.Values{"id": {sid}, "older_than": {"0s"}, "at": {"2000-01-01T00:00:00Z"}})
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusForbidden {
				t.Fatalf("read-only post to %s: %d", path, res.StatusCode)
			}
		}
		if st := e.jobState(t, id); st != "cancelled" {
			t.Fatalf("a read-only post changed the job: %s", st)
		}
	})
}
