package api_test

import (
	"context"
	"database/sql"
	"net/http"
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
		if p.Uses != 1 || p.Fails != 1 || p.Rate != 1.0/3 || !p.Stale || p.VerifiedAt != nil {
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
		expectError(t, serve(srv, "POST", "/v1/playbooks/nope/use", `{"workspace":"/w","success":true}`, auth), http.StatusNotFound, "no playbook nope")
		expectError(t, serve(srv, "POST", "/v1/playbooks/release/use", `{"workspace":"/other","success":true}`, auth), http.StatusNotFound, "no playbook release")

		var list struct {
			Playbooks []memories.Playbook `json:"playbooks"`
		}
		expect(t, serve(srv, "GET", "/v1/playbooks?workspace=/w", "", auth), http.StatusOK, &list)
		if len(list.Playbooks) != 2 || list.Playbooks[0].Slug != "release" || list.Playbooks[1].Slug != "bisect" || list.Playbooks[0].Uses != 1 {
			t.Fatalf("list: %+v", list)
		}
		expectError(t, serve(srv, "GET", "/v1/playbooks", "", auth), http.StatusBadRequest, "workspace")
	})
}
