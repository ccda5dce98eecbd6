package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

const token = "s3cret-token"

// riverUIJobIDs lists discarded jobs through River UI's own API, behind mull's guard.
func riverUIJobIDs(t *testing.T, f *fixture, opts ...reqOpt) []int64 {
	t.Helper()
	var body struct {
		Data []struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	expect(t, f.do("GET", "/riverui/api/jobs?state=discarded&limit=20", "", opts...), http.StatusOK, &body)
	var ids []int64
	for _, j := range body.Data {
		ids = append(ids, j.ID)
	}
	return ids
}

func TestAdminToken(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, token)
		dead := f.dead()

		for _, path := range []string{"/v1/admin/dlq", fmt.Sprintf("/v1/admin/dlq/%d", dead.ID), "/riverui/", "/riverui/api/jobs?state=discarded"} {
			for name, opts := range map[string][]reqOpt{
				"no header":       nil,
				"wrong token":     {bearer("nope")},
				"token prefix":    {bearer(token[:4])},
				"token plus more": {bearer(token + "x")},
				"no Bearer":       {header("Authorization", token)},
				"Basic":           {header("Authorization", "Basic "+token)},
				"two spaces":      {header("Authorization", "Bearer  "+token)},
			} {
				rec := f.do("GET", path, "", opts...)
				if rec.Code != http.StatusUnauthorized {
					t.Fatalf("GET %s with %s: status %d, want 401", path, name, rec.Code)
				}
				if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="mull admin"` {
					t.Fatalf("GET %s with %s: WWW-Authenticate %q", path, name, got)
				}
			}
			expect(t, f.do("GET", path, "", bearer(token)), http.StatusOK, nil)
			expect(t, f.do("GET", path, "", header("Authorization", "bearer "+token)), http.StatusOK, nil)
			// A token works from anywhere.
			expect(t, f.do("GET", path, "", bearer(token), from("203.0.113.5:1234")), http.StatusOK, nil)
		}
		expectError(t, f.do("GET", "/v1/admin/dlq", ""), http.StatusUnauthorized, "Authorization: Bearer")

		// Writes are guarded before their body is read, and change nothing.
		for _, path := range []string{"/v1/admin/dlq/retry", "/v1/admin/dlq/purge"} {
			expect(t, f.do("POST", path, `{"all":true,"older_than":"0s"}`, bearer("nope")), http.StatusUnauthorized, nil)
		}
		if row := f.get(dead.ID); row.State != rivertype.JobStateDiscarded {
			t.Fatalf("dead letter is %s after refused writes", row.State)
		}

		if ids := riverUIJobIDs(t, f, bearer(token)); !slices.Contains(ids, dead.ID) {
			t.Fatalf("River UI lists discarded jobs %v, want %d among them", ids, dead.ID)
		}
		// Health and metrics stay public.
		expect(t, f.do("GET", "/metrics", "", from("203.0.113.5:1234")), http.StatusOK, nil)
	})
}

func TestAdminLoopbackOnlyWithoutToken(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, "")
		dead := f.dead()

		for _, path := range []string{"/v1/admin/dlq", fmt.Sprintf("/v1/admin/dlq/%d", dead.ID), "/riverui/", "/riverui/api/jobs?state=discarded"} {
			for _, remote := range []string{"203.0.113.5:1234", "[2001:db8::1]:1234", "10.0.0.7:80", "192.0.2.1:1234"} {
				expectError(t, f.do("GET", path, "", from(remote)), http.StatusForbidden, "MULL_ADMIN_TOKEN")
				// A bearer token means nothing when none is configured.
				expect(t, f.do("GET", path, "", from(remote), bearer("anything")), http.StatusForbidden, nil)
			}
			for _, local := range []string{"127.0.0.1:5555", "127.9.9.9:1", "[::1]:5555"} {
				expect(t, f.do("GET", path, "", from(local)), http.StatusOK, nil)
			}
		}

		rec := f.do("POST", "/v1/admin/dlq/retry", `{"all":true}`, from("203.0.113.5:1234"))
		expect(t, rec, http.StatusForbidden, nil)
		rec = f.do("POST", "/v1/admin/dlq/purge", `{"older_than":"0s"}`, from("203.0.113.5:1234"))
		expect(t, rec, http.StatusForbidden, nil)
		if row := f.get(dead.ID); row.State != rivertype.JobStateDiscarded {
			t.Fatalf("dead letter is %s after refused writes", row.State)
		}

		if ids := riverUIJobIDs(t, f); !slices.Contains(ids, dead.ID) {
			t.Fatalf("River UI lists discarded jobs %v, want %d among them", ids, dead.ID)
		}
		rec = f.do("GET", "/riverui", "")
		if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/riverui/" {
			t.Fatalf("GET /riverui: %d to %q, want a redirect to /riverui/", rec.Code, rec.Header().Get("Location"))
		}
		expect(t, f.do("DELETE", "/v1/admin/dlq", ""), http.StatusMethodNotAllowed, nil)
	})
}
