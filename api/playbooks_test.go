package api_test

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestPlaybookRoutes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		s.SetClock(func() time.Time { return now })
		srv := memoryServer(t, s, apiToken)
		auth := bearer(apiToken)
		err := s.InTx(context.Background(), func(tx *sql.Tx) error {
			for _, slug := range []string{"bisect", "release"} {
				if err := s.PutPlaybook(context.Background(), tx, store.Playbook{Workspace: "/w", Slug: slug, Steps: []string{"step"}, UpdatedAt: now}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, serve(srv, "POST", "/v1/playbooks/release/use", `{"workspace":"/w","success":true}`), http.StatusUnauthorized, nil)

		var p memories.Playbook
		expect(t, serve(srv, "POST", "/v1/playbooks/release/use", `{"workspace":"/w","success":true}`, auth), http.StatusOK, &p)
		if p.Uses != 1 || p.Successes != 1 || p.Fails != 0 || p.Rate != 2.0/3 || p.Stale || p.VerifiedAt == nil || !p.VerifiedAt.Equal(now) {
			t.Fatalf("success: %+v", p)
		}
		p = memories.Playbook{}
		expect(t, serve(srv, "POST", "/v1/playbooks/bisect/use", `{"workspace":"/w","success":false}`, auth), http.StatusOK, &p)
		if p.Uses != 1 || p.Fails != 1 || p.Rate != 1.0/3 || p.Stale || p.VerifiedAt != nil {
			t.Fatalf("failure: %+v", p)
		}
		for body, field := range map[string]string{
			`{"workspace":"/w"}`:                 "success",
			`{"workspace":"/w","success":null}`:  "success",
			`{"success":true}`:                   "workspace",
			`{"workspace":"/w","success":"yes"}`: "invalid JSON body",
			`{"workspace":"/w","ok":true}`:       `unknown field "ok"`,
		} {
			expectError(t, serve(srv, "POST", "/v1/playbooks/release/use", body, auth), http.StatusBadRequest, field)
		}
		expectError(t, serve(srv, "POST", "/v1/playbooks/release/use?workspace=/w", `{"workspace":"/other","success":true}`, auth),
			http.StatusBadRequest, `workspace: the body says "/other" but ?workspace= says "/w"`)
		expectError(t, serve(srv, "POST", "/v1/playbooks/release/use?workspace=", `{"success":true}`, auth), http.StatusBadRequest, "workspace")
		expectError(t, serve(srv, "POST", "/v1/playbooks/release/use?workspace=/other", `{"success":true}`, auth), http.StatusNotFound, "no playbook release in workspace /other")
		expectError(t, serve(srv, "POST", "/v1/playbooks/nope/use", `{"workspace":"/w","success":true}`, auth), http.StatusNotFound, "no playbook nope")
		expectError(t, serve(srv, "POST", "/v1/playbooks/release/use", `{"workspace":"/other","success":true}`, auth), http.StatusNotFound, "no playbook release")

		// ?workspace= as GET /v1/playbooks takes it; the same in both is fine.
		for i, c := range []struct{ path, body string }{
			{"/v1/playbooks/release/use?workspace=/w", `{"success":true}`},
			{"/v1/playbooks/release/use?workspace=%2Fw", `{"workspace":"/w","success":false}`},
		} {
			p = memories.Playbook{}
			expect(t, serve(srv, "POST", c.path, c.body, auth), http.StatusOK, &p)
			if p.Workspace != "/w" || p.Slug != "release" || p.Uses != 2+i {
				t.Fatalf("%s %s: %+v", c.path, c.body, p)
			}
		}

		var list struct {
			Playbooks []memories.Playbook `json:"playbooks"`
		}
		expect(t, serve(srv, "GET", "/v1/playbooks?workspace=/w", "", auth), http.StatusOK, &list)
		if len(list.Playbooks) != 2 || list.Playbooks[0].Slug != "release" || list.Playbooks[1].Slug != "bisect" || list.Playbooks[0].Uses != 3 {
			t.Fatalf("list: %+v", list)
		}
		expectError(t, serve(srv, "GET", "/v1/playbooks", "", auth), http.StatusBadRequest, "workspace")
	})
}

// A retro's handoff or playbook republishes the digest at once: the next
// GET with the old ETag gets the new text. A use only counts.
func TestDigestRepublishedOnRetroSections(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		s.SetClock(func() time.Time { return now })
		srv := memoryServer(t, s, apiToken)
		auth := bearer(apiToken)
		write := func(f func(tx *sql.Tx) error) {
			t.Helper()
			now = now.Add(time.Minute)
			if err := s.InTx(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		get := func(etag string, status int, want string) string {
			t.Helper()
			rec := serve(srv, "GET", "/v1/digest?workspace=/w", "", auth, header("If-None-Match", etag))
			if status == http.StatusNotModified {
				expect(t, rec, status, nil)
				return etag
			}
			var d digestBody
			expect(t, rec, status, &d)
			if d.ETag == etag || !strings.Contains(d.Text, want) {
				t.Fatalf("digest %s (was %s) lacks %q:\n%s", d.ETag, etag, want, d.Text)
			}
			return d.ETag
		}
		expect(t, serve(srv, "POST", "/v1/memories", `{"workspace":"/w","kind":"fact","text":"the build uses make"}`, auth), http.StatusCreated, nil)
		etag := get("", http.StatusOK, "the build uses make")
		get(etag, http.StatusNotModified, "")

		write(func(tx *sql.Tx) error {
			return s.PutHandoff(ctx, tx, store.Handoff{Workspace: "/w", Text: "Next: release 1.2", SessionID: "s", JobID: 1, RecordedAt: now})
		})
		etag = get(etag, http.StatusOK, "Next: release 1.2")
		write(func(tx *sql.Tx) error {
			return s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/w", Slug: "release", Steps: []string{"tag"}, SessionID: "s", JobID: 1, UpdatedAt: now})
		})
		etag = get(etag, http.StatusOK, "release: tag (0 ok, 0 failed)")
		now = now.Add(time.Minute)
		expect(t, serve(srv, "POST", "/v1/playbooks/release/use?workspace=/w", `{"success":true}`, auth), http.StatusOK, nil)
		get(etag, http.StatusNotModified, "")
	})
}
