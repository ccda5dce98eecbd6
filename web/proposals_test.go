package web_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/web"
)

// addProposal stores a pending proposal as a retro does (the store's own
// insert, as the memories and api tests make one).
func addProposal(t *testing.T, s *store.Store, id, ws, summary string, at time.Time) {
	t.Helper()
	err := s.InTx(context.Background(), func(tx *sql.Tx) error {
		ok, err := s.AddPendingProposal(context.Background(), tx, store.Proposal{ID: id, Workspace: ws, Summary: summary,
			Detail: "```sh\nmake " + id + "\n```", SessionID: "sess-" + id, JobID: 7, CreatedAt: at})
		if err == nil && !ok {
			t.Fatalf("proposal %s not stored (one pending per workspace)", id)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func proposalStatus(t *testing.T, s *store.Store, id string) store.Proposal {
	t.Helper()
	p, err := s.GetProposal(context.Background(), s.DB, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The proposals page lists proposals with their content, source session,
// status counts linking to the filtered lists, and filters by workspace
// and status; with none it says what to do next.
func TestPanelProposalsPage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		code, body := e.get(c, "/proposals")
		if code != http.StatusOK || !strings.Contains(body, "No proposals yet") || !strings.Contains(body, "mull dsh install") {
			t.Fatalf("empty: %d\n%s", code, body)
		}
		t0 := time.Now().Add(-2 * time.Hour)
		addProposal(t, s, "retro-1", "/w", "cache go modules in CI", t0)
		addProposal(t, s, "retro-2", "/v", "add a lint step", t0.Add(time.Minute))
		code, body = e.get(c, "/proposals")
		for _, want := range []string{"cache go modules in CI", "add a lint step", `href="/sessions/sess-retro-1"`,
			`href="/riverui/jobs/7"`, "make retro-1", `action="/proposals/retro-1/accept"`, `action="/proposals/retro-2/reject"`,
			`href="/proposals?status=pending"`, `name="csrf"`} {
			if !strings.Contains(body, want) {
				t.Fatalf("list lacks %q: %d\n%s", want, code, body)
			}
		}
		e.wantOnly(t, c, "/proposals?workspace=/v&status=pending", "add a lint step", "cache go modules")
		_, body = e.get(c, "/proposals?status=rejected")
		if !strings.Contains(body, "No proposals match these filters") {
			t.Fatalf("no rejected:\n%s", body)
		}
		if code, body := e.get(c, "/proposals?status=maybe"); code != http.StatusBadRequest || !strings.Contains(body, `class="error"`) {
			t.Fatalf("bad status: %d\n%s", code, body)
		}
	})
}

// Accept and reject through the forms change the store through
// memories.DecideProposal: a rejection keeps its note as a lesson, and the
// decided proposal shows when and the note. A missing note, a decided
// proposal and an unknown one are errors shown in place.
func TestPanelProposalsDecide(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		t0 := time.Now().Add(-time.Hour)
		addProposal(t, s, "retro-1", "/w", "cache go modules in CI", t0)
		addProposal(t, s, "retro-2", "/v", "add a lint step", t0)
		c := e.httpClient(true)
		_, page := e.get(c, "/proposals")
		tok := csrfToken(t, page)

		res := e.postForm(c, "/proposals/retro-1/accept", url.Values{"csrf": {tok}, "back": {"/proposals?workspace=/w"}})
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/proposals?workspace=/w" {
			t.Fatalf("accept: %d to %q", res.StatusCode, res.Header.Get("Location"))
		}
		if p := proposalStatus(t, s, "retro-1"); p.Status != store.ProposalAccepted || p.DecidedAt.IsZero() || p.DecidedBy != store.DecidedByPanel {
			t.Fatalf("after accept: %+v", p)
		}
		if code, body := e.get(c, "/proposals?workspace=/w"); code != http.StatusOK || !strings.Contains(body, "Proposal retro-1 accepted.") ||
			!strings.Contains(body, "accepted by <span class=\"decided-by\" title=\"recorded as “admin (panel)”\">an admin (panel)</span>") {
			t.Fatalf("after accept: %d\n%s", code, body)
		}

		res = e.postForm(c, "/proposals/retro-2/reject", url.Values{"csrf": {tok}, "note": {"  "}})
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("reject without a note: %d", res.StatusCode)
		}
		if p := proposalStatus(t, s, "retro-2"); p.Status != store.ProposalPending {
			t.Fatalf("a refused reject changed it: %+v", p)
		}
		res = e.postForm(c, "/proposals/retro-2/reject", url.Values{"csrf": {tok}, "note": {"we lint in the editor"}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("reject: %d", res.StatusCode)
		}
		if p := proposalStatus(t, s, "retro-2"); p.Status != store.ProposalRejected || p.Note != "we lint in the editor" || p.DecidedBy != store.DecidedByPanel {
			t.Fatalf("after reject: %+v", p)
		}
		lessons, err := e.Mem.List(context.Background(), store.MemoryFilter{Kind: string(memory.Lesson)})
		if err != nil || len(lessons) != 1 || !strings.Contains(lessons[0].Text, "we lint in the editor") {
			t.Fatalf("the rejection's lesson: %+v, %v", lessons, err)
		}
		_, body := e.get(c, "/proposals?workspace=/v")
		if !strings.Contains(body, "rejected by <span class=\"decided-by\" title=\"recorded as “admin (panel)”\">an admin (panel)</span>") || !strings.Contains(body, "we lint in the editor") {
			t.Fatalf("decided proposal:\n%s", body)
		}

		res = e.postForm(c, "/proposals/retro-2/accept", url.Values{"csrf": {tok}})
		if res.StatusCode != http.StatusConflict {
			t.Fatalf("deciding twice: %d", res.StatusCode)
		}
		if p := proposalStatus(t, s, "retro-2"); p.Status != store.ProposalRejected {
			t.Fatalf("deciding twice changed it: %+v", p)
		}
		if res := e.postForm(c, "/proposals/nope/accept", url.Values{"csrf": {tok}}); res.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown proposal: %d", res.StatusCode)
		}
	})
}

// A post without the admin cookie, with a forged or missing CSRF token, or
// from another site changes nothing.
func TestPanelProposalsRefusedPosts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		addProposal(t, s, "retro-1", "/w", "cache go modules in CI", time.Now())
		admin := e.httpClient(true)
		_, page := e.get(admin, "/proposals")
		tok := csrfToken(t, page)

		anon := e.httpClient(false)
		if res := e.postForm(anon, "/proposals/retro-1/accept", url.Values{"csrf": {tok}}); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("anonymous: %d", res.StatusCode)
		}
		if res := e.postForm(admin, "/proposals/retro-1/accept", url.Values{"csrf": {"forged"}}); res.StatusCode != http.StatusForbidden {
			t.Fatalf("forged token: %d", res.StatusCode)
		}
		if res := e.postForm(admin, "/proposals/retro-1/reject", url.Values{"note": {"no"}}); res.StatusCode != http.StatusForbidden {
			t.Fatalf("no token: %d", res.StatusCode)
		}
		req, _ := http.NewRequest("POST", e.URL+"/proposals/retro-1/accept", strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Origin", "https://evil.example")
		res, err := admin.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-site: %d", res.StatusCode)
		}
		if p := proposalStatus(t, s, "retro-1"); p.Status != store.ProposalPending {
			t.Fatalf("a refused post changed it: %+v", p)
		}
	})
}

// A browser that may read but not act sees the proposals and the ledger
// fact without their forms, and its posts are refused without a change.
func TestPanelProposalsReadOnly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		addProposal(t, s, "retro-1", "/w", "cache go modules in CI", time.Now())
		cmd, _ := e.ledgerFacts()
		p, err := web.New(web.Deps{Store: s, Memories: e.Mem, Negledger: e.Neg, Harness: e.Harn,
			Access: func(*http.Request) web.Access { return web.Access{Read: true, Why: "a read-only test browser"} }})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		t.Cleanup(srv.Close)
		ro := &env{t: t, URL: srv.URL}
		c := ro.httpClient(false)
		for _, path := range []string{"/proposals", fmt.Sprintf("/ledger/%d", cmd)} {
			code, body := ro.get(c, path)
			if code != http.StatusOK || strings.Contains(body, `method="post"`) || !strings.Contains(body, "Read-only: a read-only test browser") {
				t.Fatalf("read-only %s: %d\n%s", path, code, body)
			}
		}
		if res := ro.postForm(c, "/proposals/retro-1/accept", url.Values{}); res.StatusCode != http.StatusForbidden {
			t.Fatalf("read-only accept: %d", res.StatusCode)
		}
		if res := ro.postForm(c, fmt.Sprintf("/ledger/%d/resolve", cmd), url.Values{"reason": {"x"}}); res.StatusCode != http.StatusForbidden {
			t.Fatalf("read-only resolve: %d", res.StatusCode)
		}
		if p := proposalStatus(t, s, "retro-1"); p.Status != store.ProposalPending {
			t.Fatalf("a read-only post changed it: %+v", p)
		}
		if f, _ := e.Neg.Get(context.Background(), cmd); f.Status != ledger.Active {
			t.Fatalf("a read-only post resolved it: %+v", f)
		}
	})
}

// A harness refinement waiting for approval is decided by the harness
// service, as the API and the CLI do: its rejection writes no lesson, its
// accept applies it (here an empty refinement).
func TestPanelProposalsHarnessKind(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		ctx := context.Background()
		for _, id := range []string{"harness-1", "harness-2"} {
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				_, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: id, Workspace: "/w", Summary: "tighten the review skill",
					Kind: store.ProposalHarness, Payload: `{}`, CreatedAt: time.Now()})
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		c := e.httpClient(true)
		_, page := e.get(c, "/proposals")
		if !strings.Contains(page, ">harness</span>") {
			t.Fatalf("the harness mark is missing:\n%s", page)
		}
		tok := csrfToken(t, page)
		if res := e.postForm(c, "/proposals/harness-1/reject", url.Values{"csrf": {tok}, "note": {"not now"}}); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("reject: %d", res.StatusCode)
		}
		if p := proposalStatus(t, s, "harness-1"); p.Status != store.ProposalRejected || p.Note != "not now" {
			t.Fatalf("after reject: %+v", p)
		}
		if lessons, err := e.Mem.List(ctx, store.MemoryFilter{Kind: string(memory.Lesson)}); err != nil || len(lessons) != 0 {
			t.Fatalf("a harness rejection wrote lessons: %+v, %v", lessons, err)
		}
		if res := e.postForm(c, "/proposals/harness-2/accept", url.Values{"csrf": {tok}}); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("accept: %d", res.StatusCode)
		}
		if p := proposalStatus(t, s, "harness-2"); p.Status != store.ProposalAccepted || p.DecidedBy != store.DecidedByPanel {
			t.Fatalf("after accept: %+v", p)
		}
		if _, body := e.get(c, "/proposals"); !strings.Contains(body, "Harness proposal harness-2 accepted.") {
			t.Fatalf("after accept:\n%s", body)
		}
		// A proposal decided before mull recorded who decides (migration
		// 033's default) says so rather than naming anyone.
		if _, err := s.DB.ExecContext(ctx, `update proposals set decided_by = '' where id = 'harness-1'`); err != nil {
			t.Fatal(err)
		}
		if _, body := e.get(c, "/proposals"); !strings.Contains(body, ">someone (not recorded)</span>") {
			t.Fatalf("an old decision:\n%s", body)
		}
	})
}

// The list is paginated: 20 a page, the next page linked.
func TestPanelProposalsPaginated(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		t0 := time.Now().Add(-time.Hour)
		for i := range 23 {
			addProposal(t, s, fmt.Sprintf("retro-%02d", i), fmt.Sprintf("/w%02d", i), fmt.Sprintf("idea %02d", i), t0.Add(time.Duration(i)*time.Second))
		}
		c := e.httpClient(true)
		_, body := e.get(c, "/proposals")
		if !strings.Contains(body, "idea 22") || strings.Contains(body, "idea 02") || !strings.Contains(body, `href="/proposals?page=2" rel="next"`) {
			t.Fatalf("page 1:\n%s", body)
		}
		_, body = e.get(c, "/proposals?page=2")
		if !strings.Contains(body, "idea 02") || !strings.Contains(body, "idea 00") || strings.Contains(body, "idea 03") || strings.Contains(body, `rel="next"`) {
			t.Fatalf("page 2:\n%s", body)
		}
	})
}
