package web_test

import (
	"context"
	"database/sql"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// useRowRe matches one row of a use list.
var useRowRe = regexp.MustCompile(`<tr id="use-\d+"`)

// follow finds the link whose text is text and whose href starts with
// prefix in body, gets it and returns the page and how many use rows it
// lists.
func (e *env) follow(t *testing.T, c *http.Client, body, prefix, text string) (string, int) {
	t.Helper()
	re := regexp.MustCompile(`href="(` + regexp.QuoteMeta(prefix) + `[^"]*)"[^>]*>` + regexp.QuoteMeta(text) + `</a>`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no link %q to %s… in\n%s", text, prefix, body)
	}
	code, page := e.get(c, html.UnescapeString(m[1]))
	if code != http.StatusOK {
		t.Fatalf("%s: %d\n%s", m[1], code, page)
	}
	return page, len(useRowRe.FindAllString(page, -1))
}

// Every number of the playbooks pages links to the use rows behind it:
// per workspace (5 uses, 3 successes, 2 fails) and per playbook (4, 3, 1),
// and a total counted before the log says how much of it is not listed.
func TestPanelPlaybookUses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		now := time.Now()
		addPlaybook(t, s, "/w", "go-test", now.Add(-time.Hour))
		addPlaybook(t, s, "/w", "lint", now.Add(-time.Hour))
		for _, u := range []struct {
			slug string
			ok   bool
		}{{"go-test", true}, {"go-test", false}, {"go-test", true}, {"go-test", true}, {"lint", false}} {
			if _, err := e.Mem.UsePlaybook(context.Background(), store.PlaybookUse{Workspace: "/w", Slug: u.slug, Success: u.ok,
				ReportedBy: store.PlaybookByAgent, SessionID: "sess-pb"}); err != nil {
				t.Fatal(err)
			}
		}
		_, body := e.get(c, "/playbooks")
		for _, l := range []struct {
			text string
			want int
		}{{"5", 5}, {"3", 3}, {"2", 2}} {
			if _, n := e.follow(t, c, body, "/playbooks/uses?", l.text); n != l.want {
				t.Fatalf("workspace link %s lists %d rows", l.text, n)
			}
		}
		_, body = e.get(c, "/playbooks?workspace=/w")
		for _, l := range []struct {
			text string
			want int
		}{{"4", 4}, {"3", 3}, {"1", 1}} {
			page, n := e.follow(t, c, body, "/playbooks/uses?", l.text)
			if n != l.want || !strings.Contains(page, "go-test") || strings.Contains(page, ">lint<") {
				t.Fatalf("go-test link %s lists %d rows\n%s", l.text, n, page)
			}
		}
		code, page := e.get(c, "/playbooks/uses?workspace=/w&slug=go-test&outcome=fail")
		for _, want := range []string{"agent (api)", `href="/sessions/sess-pb"`, `class="badge bad">fail`, "1 fails of"} {
			if code != http.StatusOK || !strings.Contains(page, want) {
				t.Fatalf("fail rows lack %q: %d\n%s", want, code, page)
			}
		}
		// Uses counted before the log: the page says how many are not listed.
		if _, err := s.DB.ExecContext(context.Background(), `update playbooks set uses = uses + 2, successes = successes + 2 where slug = 'lint'`); err != nil {
			t.Fatal(err)
		}
		_, page = e.get(c, "/playbooks/uses?workspace=/w&slug=lint")
		if !strings.Contains(page, "3 uses of") || !strings.Contains(page, "1 listed below, 2 counted before mull kept a use log") || len(useRowRe.FindAllString(page, -1)) != 1 {
			t.Fatalf("lint with uses before the log:\n%s", page)
		}
		if code, page := e.get(c, "/playbooks/uses?workspace=/w&outcome=maybe"); code != http.StatusBadRequest || !strings.Contains(page, `outcome &#34;maybe&#34;`) {
			t.Fatalf("bad outcome: %d\n%s", code, page)
		}
		if code, _ := e.get(c, "/playbooks/uses?workspace=/w&slug=nope"); code != http.StatusNotFound {
			t.Fatalf("unknown playbook: %d", code)
		}
		if code, _ := e.get(c, "/playbooks/uses"); code != http.StatusBadRequest {
			t.Fatalf("no workspace: %d", code)
		}
		if _, page := e.get(c, "/playbooks/uses?workspace=/v"); !strings.Contains(page, "No use logged here yet") {
			t.Fatalf("empty:\n%s", page)
		}
	})
}

// A memory's uses link to their rows: the page shows the newest 5 of 7
// logged (searches, a duplicate write, a retro's repeat with its job and
// session), /memories/{id}/uses lists all 7, and 2 uses counted before the
// log are said to be so.
func TestPanelMemoryUses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		ctx := context.Background()
		w := memory.Write{Workspace: "/w", Kind: memory.Fact, Text: "the invoices service builds with make"}
		wr, err := e.Mem.Remember(ctx, w, memory.Provenance{Origin: memory.OriginTool})
		if err != nil {
			t.Fatal(err)
		}
		id := wr.Memory.ID
		if wr, err = e.Mem.Remember(ctx, w, memory.Provenance{Origin: memory.OriginTool}); err != nil || !wr.Duplicate {
			t.Fatalf("duplicate: %+v, %v", wr, err)
		}
		for range 5 {
			if hits, err := e.Mem.Search(ctx, memories.Query{Workspace: "/w", Text: "invoices make", Session: "sess-search"}); err != nil || len(hits) != 1 {
				t.Fatalf("search: %+v, %v", hits, err)
			}
		}
		if _, err := e.Mem.Search(ctx, memories.Query{Workspace: "/w", Text: "invoices", Peek: true}); err != nil {
			t.Fatal(err)
		}
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			return s.BumpUses(ctx, tx, store.MemoryUse{Cause: store.UseRetro, Workspace: "/w", JobID: 4242, SessionID: "sess-retro"}, id)
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DB.ExecContext(ctx, `update memories set uses = uses + 2 where id = $1`, id); err != nil {
			t.Fatal(err)
		}
		ids := strconv.FormatInt(id, 10)
		code, body := e.get(c, "/memories/"+ids)
		for _, want := range []string{`id="uses-total">9</a>`, "7 in the use log, 2 counted before mull kept one", "a retro repeated it",
			`href="/riverui/jobs/4242"`, `href="/sessions/sess-retro"`, "all 7 logged uses"} {
			if code != http.StatusOK || !strings.Contains(body, want) {
				t.Fatalf("memory page lacks %q: %d\n%s", want, code, body)
			}
		}
		if n := len(useRowRe.FindAllString(body, -1)); n != 5 {
			t.Fatalf("memory page shows %d uses, want the newest 5", n)
		}
		page, n := e.follow(t, c, body, "/memories/"+ids+"/uses", "9")
		if n != 7 || !strings.Contains(page, "7 listed below, 2 counted before mull kept a use log") ||
			strings.Count(page, "a search returned it") != 5 || !strings.Contains(page, "written again (tool)") {
			t.Fatalf("uses page lists %d:\n%s", n, page)
		}
		if strings.Index(page, "a retro repeated it") > strings.Index(page, "written again") {
			t.Fatalf("uses must be newest first:\n%s", page)
		}
		if code, _ := e.get(c, "/memories/999999/uses"); code != http.StatusNotFound {
			t.Fatalf("unknown memory: %d", code)
		}
		w.Text = "never used"
		wr, _ = e.Mem.Remember(ctx, w, memory.Provenance{Origin: memory.OriginTool})
		if _, page := e.get(c, "/memories/"+strconv.FormatInt(wr.Memory.ID, 10)+"/uses"); !strings.Contains(page, "No use logged yet") {
			t.Fatalf("empty:\n%s", page)
		}
	})
}

// A session's "N error retros scheduled" links to its scheduling rows,
// with their jobs; a folded one is marked, and a count from before the log
// says so.
func TestPanelSessionErrorRetros(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		ctx := context.Background()
		now := time.Now().UTC()
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			if _, _, err := s.LockSession(ctx, tx, "sess-err", "/w", now); err != nil {
				return err
			}
			// 3 counted: 2 logged, 1 from before the log; 1 folded.
			if err := s.PutErrorRetro(ctx, tx, store.ErrorRetro{SessionID: "sess-err", Count: 3, LastScheduledAt: now}); err != nil {
				return err
			}
			for _, j := range []int64{501, 502, 503} {
				if err := s.LogErrorRetro(ctx, tx, store.ErrorRetroSchedule{SessionID: "sess-err", At: now, JobID: j, Due: now}); err != nil {
					return err
				}
			}
			return s.FoldErrorRetros(ctx, tx, "sess-err", 503)
		}); err != nil {
			t.Fatal(err)
		}
		code, body := e.get(c, "/sessions/sess-err")
		for _, want := range []string{`<a href="#error-retros">3 error retros scheduled</a>`, `id="error-retros"`, `href="/riverui/jobs/501"`,
			`href="/riverui/jobs/502"`, "folded into the session retro: not counted", "1 scheduled before mull kept a log"} {
			if code != http.StatusOK || !strings.Contains(body, want) {
				t.Fatalf("session page lacks %q: %d\n%s", want, code, body)
			}
		}
		if n := strings.Count(body, `<li id="error-retro-`); n != 3 {
			t.Fatalf("%d scheduling rows, want 3", n)
		}
	})
}
