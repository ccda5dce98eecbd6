package web_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/web"
)

// An empty harness says what makes entries, refinements and reviews.
func TestPanelHarnessEmpty(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		for path, wants := range map[string][]string{
			"/harness":                          {"No harness entries yet", "mull harness refine --global", "No refinements yet", "No reviews yet"},
			"/harness/refinements":              {"No refinements yet", "mull harness apply FILE"},
			"/harness/reviews":                  {"No reviews yet", "harness.turn_interval"},
			"/harness?kind=skill":               {"No entry matches"},
			"/harness?page=2":                   {"No entry matches"},
			"/harness?page=9223372036854775807": {"No entry matches"},
		} {
			code, body := e.get(c, path)
			if code != http.StatusOK {
				t.Fatalf("%s: %d\n%s", path, code, body)
			}
			wantIn(t, path, body, wants...)
		}
		e.wantRefused(t, c, http.StatusBadRequest, "/harness?kind=nope")
		e.wantRefused(t, c, http.StatusNotFound, "/harness/refinements/nope")
		e.wantRefused(t, c, http.StatusNotFound, "/harness/entries/memory/nope")
	})
}

// With a refine_review job's refinement and an update on top: the index
// lists the entry at v2, both refinements (with rollback buttons) and the
// job's review; the entry's page diffs v1 → v2 line by line; the
// refinement's page shows its edit's diff and the review that made it.
func TestPanelHarnessPages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		d := harnessFixture(t, e)
		c := e.httpClient(true)
		for _, session := range []string{"sess-inj-1", "sess-inj-2", "sess-inj-1"} {
			if err := e.Harn.RecordInjections(context.Background(), session, []string{"global:memory:" + d.Entry}); err != nil {
				t.Fatal(err)
			}
		}

		code, body := e.get(c, "/harness")
		if code != http.StatusOK {
			t.Fatalf("/harness: %d\n%s", code, body)
		}
		wantIn(t, "/harness", body, d.Entry, ">v2<", d.Created, d.Updated, "/harness/refinements/"+d.Updated+"/rollback",
			`<span class="badge ok">approved</span>`, "manual", "global (1)")
		entry := "/harness/entries/memory/" + d.Entry
		wantLinked(t, "/harness", body, entry+"#injections", "3", entry+"#versions", "v2")

		code, body = e.get(c, "/harness/entries/memory/"+d.Entry)
		if code != http.StatusOK {
			t.Fatalf("entry: %d\n%s", code, body)
		}
		wantIn(t, "entry page", body, `id="v2"`, `id="v1"`, "<ins>+ "+updatedLine+"</ins>", "from v1: +1 −0 lines",
			"/harness/refinements/"+d.Created, "/harness/refinements/"+d.Updated)
		wantLinked(t, "entry page", body, "#injections", "3", "/sessions/sess-inj-1", "sess-inj-1", "/sessions/sess-inj-2", "sess-inj-2")
		if i, j := strings.Index(body, "sess-inj-1"), strings.Index(body, "sess-inj-2"); i > j {
			t.Fatalf("entry page: the sessions are not the latest first:\n%s", body)
		}
		code, body = e.get(c, "/harness/entries/memory/"+d.Entry+"?from=2&to=1")
		if code != http.StatusOK {
			t.Fatalf("compare: %d", code)
		}
		wantIn(t, "compare v2 → v1", body, "v2 → v1", "<del>- "+updatedLine+"</del>")

		code, body = e.get(c, "/harness/refinements/"+d.Updated)
		if code != http.StatusOK {
			t.Fatalf("refinement: %d\n%s", code, body)
		}
		wantIn(t, "refinement page", body, "add the test-first line", "the operator&#39;s note", "<ins>+ "+updatedLine+"</ins>",
			`badge ok">applied`, "roll back", "None: it was applied by hand")
		code, body = e.get(c, "/harness/refinements/"+d.Created)
		if code != http.StatusOK {
			t.Fatalf("created refinement: %d\n%s", code, body)
		}
		wantIn(t, "the job's refinement", body, "Reviews that made it", "/riverui/jobs/", `<span class="badge ok">approved</span>`)

		code, body = e.get(c, "/harness/reviews?outcome=approved")
		if code != http.StatusOK {
			t.Fatalf("reviews: %d", code)
		}
		wantIn(t, "reviews", body, "/harness/refinements/"+d.Created)
		// The operator's refine job and apply are both an admin's.
		_, body = e.get(c, "/harness/refinements?source=admin")
		wantIn(t, "admin refinements", body, `"/harness/refinements/`+d.Created+`"`, `"/harness/refinements/`+d.Updated+`"`)
		_, body = e.get(c, "/harness/refinements?source=agent")
		wantIn(t, "agent refinements", body, "No refinement matches")
	})
}

// The rollback button rolls back through the service: the refinement is
// marked rolled back and the entry's content is the one before it (a new
// version). Asked again, the service refuses and the refinement's page
// shows why, next to the button. A post without a login, with a forged or
// no CSRF token, from another site, or from a browser that may only read
// changes nothing.
func TestPanelHarnessRollback(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		d := harnessFixture(t, e)
		c := e.httpClient(true)
		_, page := e.get(c, "/harness")
		token := csrfToken(t, page)
		path := "/harness/refinements/" + d.Updated + "/rollback"

		unchanged := func(what string) {
			t.Helper()
			if by := rolledBackBy(t, e, d.Updated); by != "" {
				t.Fatalf("%s rolled %s back (by %s)", what, d.Updated, by)
			}
			if got, v := entryContent(t, e, d.Entry); got != d.After || v != 2 {
				t.Fatalf("%s changed the entry: v%d %q", what, v, got)
			}
		}
		if res := e.postForm(e.httpClient(false), path, url.Values{"csrf": {token}}); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("anonymous rollback: %d", res.StatusCode)
		}
		unchanged("an anonymous post")
		for what, form := range map[string]url.Values{"a forged token": {"csrf": {"forged" + token}}, "no token": {}} {
			if res := e.postForm(c, path, form); res.StatusCode != http.StatusForbidden {
				t.Fatalf("%s: %d", what, res.StatusCode)
			}
			unchanged(what)
		}
		req, _ := http.NewRequest("POST", e.URL+path, strings.NewReader(url.Values{"csrf": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-site rollback: %d", res.StatusCode)
		}
		unchanged("a cross-site post")
		readOnlyPanel(t, e, path, unchanged)

		res = e.postForm(c, path, url.Values{"csrf": {token}, "back": {"/harness?page=1"}})
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/harness?page=1" {
			t.Fatalf("rollback: %d to %q", res.StatusCode, res.Header.Get("Location"))
		}
		by := rolledBackBy(t, e, d.Updated)
		if by != "rollback_"+d.Updated {
			t.Fatalf("rolled back by %q", by)
		}
		if got, v := entryContent(t, e, d.Entry); got != d.Before || v != 3 {
			t.Fatalf("after the rollback the entry is v%d %q, want v3 %q", v, got, d.Before)
		}
		_, body := e.get(c, "/harness?page=1")
		wantIn(t, "after the rollback", body, "rolled back "+d.Updated+" as "+by+": 1 edits reversed", ">v3<")

		req, _ = http.NewRequest("POST", e.URL+path, strings.NewReader(url.Values{"csrf": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Accept", "text/html")
		res, err = c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := new(strings.Builder)
		_, _ = io.Copy(b, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusConflict {
			t.Fatalf("second rollback: %d\n%s", res.StatusCode, b)
		}
		wantIn(t, "the refused rollback", html.UnescapeString(b.String()), "The rollback was refused: refinement "+d.Updated+" was rolled back already by "+by,
			"<h1>Refinement "+d.Updated+"</h1>")
		if got, v := entryContent(t, e, d.Entry); got != d.Before || v != 3 {
			t.Fatalf("a refused rollback changed the entry: v%d %q", v, got)
		}
	})
}

// readOnlyPanel serves the panel to a browser that may read but not act:
// its pages show no rollback form, and its post is refused.
func readOnlyPanel(t *testing.T, e *env, path string, unchanged func(string)) {
	t.Helper()
	p, err := web.New(web.Deps{Store: e.S, Harness: e.Harn, Bench: e.Bench,
		Access: func(*http.Request) web.Access { return web.Access{Read: true, Why: "a test's read-only browser"} }})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/harness", nil))
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "/rollback") || !strings.Contains(rec.Body.String(), "read-only") {
		t.Fatalf("read-only /harness: %d\n%s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	req := httptest.NewRequest("POST", path, strings.NewReader("csrf=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	p.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Fatalf("read-only rollback: %d", rec.Code)
	}
	unchanged("a read-only post")
}

// The refinement list goes a page at a time (25), the index shows the
// newest 8 with a link to the older ones, and a page past the end says so.
func TestPanelHarnessPaging(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		var ids []string
		for i := range 27 {
			content := fmt.Sprintf("note number %d", i)
			out, err := e.Harn.Apply(context.Background(), harnesses.ApplyRequest{Scope: harness.Global, Proposal: harness.Proposal{
				Summary: "note", Edits: []harness.Edit{{Action: harness.Create, Kind: harness.KindPrompt, ID: fmt.Sprintf("n%02d", i), Content: &content}}}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, out.Refinement.ID)
		}
		c := e.httpClient(true)
		_, body := e.get(c, "/harness")
		wantIn(t, "/harness", body, `href="/harness/refinements?page=2">older refinements`, ids[26], "n26", "n00")
		if strings.Contains(body, `"/harness/refinements/`+ids[18]+`"`) {
			t.Fatalf("the index shows more than the newest 8 refinements")
		}
		_, body = e.get(c, "/harness/refinements")
		wantIn(t, "page 1", body, `"/harness/refinements/`+ids[26]+`"`, `"/harness/refinements/`+ids[2]+`"`, `rel="next"`)
		if strings.Contains(body, `"/harness/refinements/`+ids[1]+`"`) {
			t.Fatalf("page 1 holds more than 25 refinements")
		}
		_, body = e.get(c, "/harness/refinements?page=2")
		wantIn(t, "page 2", body, `"/harness/refinements/`+ids[1]+`"`, `"/harness/refinements/`+ids[0]+`"`, `rel="prev"`)
		_, body = e.get(c, "/harness/refinements?page=3")
		wantIn(t, "page 3", body, "No refinement matches")
	})
}

// A mull without the harness or benchmark service says so in place.
func TestPanelHarnessNotConfigured(t *testing.T) {
	p, err := web.New(web.Deps{Access: func(*http.Request) web.Access { return web.Access{Read: true, Act: true} }})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/harness", "/harness/refinements/x", "/bench", "/bench/x"} {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "not configured") {
			t.Fatalf("%s: %d\n%s", path, rec.Code, rec.Body)
		}
	}
}
