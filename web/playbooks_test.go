package web_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// addPlaybook stores a playbook as a retro writes it, written at at, then
// records uses (true a success).
func addPlaybook(t *testing.T, s *store.Store, ws, slug string, at time.Time, uses ...bool) {
	t.Helper()
	ctx := context.Background()
	err := s.InTx(ctx, func(tx *sql.Tx) error {
		if err := s.PutPlaybook(ctx, tx, store.Playbook{Workspace: ws, Slug: slug, Steps: []string{"run " + slug, "check the output"},
			SessionID: "sess-" + slug, JobID: 11, UpdatedAt: at}); err != nil {
			return err
		}
		for _, ok := range uses {
			if _, err := s.UsePlaybook(ctx, tx, store.PlaybookUse{Workspace: ws, Slug: slug, Success: ok, At: at}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The playbooks page lists the workspaces with playbooks, then one
// workspace's playbooks with their success rate, stale marks and the
// session and retro that wrote them; empty states say what to do next.
func TestPanelPlaybooksPage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		if code, body := e.get(c, "/playbooks"); code != http.StatusOK || !strings.Contains(body, "No playbooks yet") {
			t.Fatalf("empty: %d\n%s", code, body)
		}
		now := time.Now()
		addPlaybook(t, s, "/w", "go-test", now.Add(-time.Hour), true, true, false)
		addPlaybook(t, s, "/w", "old-deploy", now.Add(-40*24*time.Hour))
		addPlaybook(t, s, "/v", "lint", now.Add(-time.Hour), true)
		if err := s.InTx(context.Background(), func(tx *sql.Tx) error {
			return s.PutPlaybook(context.Background(), tx, store.Playbook{Workspace: "/v", Slug: "bold", Steps: []string{"print <b>bold</b>"},
				UpdatedAt: now})
		}); err != nil {
			t.Fatal(err)
		}

		code, body := e.get(c, "/playbooks")
		for _, want := range []string{`href="/playbooks?workspace=%2Fw"`, `href="/playbooks?state=stale&amp;workspace=%2Fw"`, ">/v</a>"} {
			if !strings.Contains(body, want) {
				t.Fatalf("workspaces lack %q: %d\n%s", want, code, body)
			}
		}
		code, body = e.get(c, "/playbooks?workspace=/w")
		for _, want := range []string{"go-test", "old-deploy", "run go-test", "60.0%", // (2+1)/(3+2)
			`class="badge warn"`, `href="/sessions/sess-go-test"`, `href="/riverui/jobs/11"`} {
			if !strings.Contains(body, want) {
				t.Fatalf("/w lacks %q: %d\n%s", want, code, body)
			}
		}
		if strings.Index(body, "go-test") > strings.Index(body, "old-deploy") {
			t.Fatalf("fresh must come before stale:\n%s", body)
		}
		if _, body = e.get(c, "/playbooks?workspace=/v"); !strings.Contains(body, "print ＜b&gt;bold＜/b&gt;") || strings.Contains(body, "<b>bold") {
			t.Fatalf("a step's markup must pass the gate and be escaped:\n%s", body)
		}
		e.wantOnly(t, c, "/playbooks?workspace=/w&state=stale", "old-deploy", "run go-test")
		if _, body = e.get(c, "/playbooks?workspace=/nowhere"); !strings.Contains(body, "This workspace has no playbooks yet") {
			t.Fatalf("unknown workspace:\n%s", body)
		}
		e.wantRefused(t, c, http.StatusBadRequest, "/playbooks?state=rotten")
	})
}

// A workspace's playbooks are shown 25 a page, in the digest's order.
func TestPanelPlaybooksPaginated(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		now := time.Now()
		for i := range 26 {
			addPlaybook(t, s, "/w", fmt.Sprintf("pb-%02d", i), now)
		}
		addPlaybook(t, s, "/w", "best", now, true)
		c := e.httpClient(true)
		_, body := e.get(c, "/playbooks?workspace=/w")
		if !strings.Contains(body, `id="playbook-best"`) || strings.Contains(body, `id="playbook-pb-24"`) || !strings.Contains(body, `rel="next"`) {
			t.Fatalf("page 1:\n%s", body)
		}
		_, body = e.get(c, "/playbooks?workspace=/w&page=2")
		if !strings.Contains(body, `id="playbook-pb-24"`) || !strings.Contains(body, `id="playbook-pb-25"`) || strings.Contains(body, `id="playbook-best"`) {
			t.Fatalf("page 2:\n%s", body)
		}
	})
}
