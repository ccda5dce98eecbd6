package api_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

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
		// Metrics name workspaces and costs: the token's, like the admin API.
		expectError(t, f.do("GET", "/metrics", "", from("203.0.113.5:1234")), http.StatusUnauthorized, "Authorization: Bearer")
		expect(t, f.do("GET", "/metrics", "", bearer(token), from("203.0.113.5:1234")), http.StatusOK, nil)
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

// loginForm posts the login form from loopback, same-origin.
func (f *fixture) loginForm(form string, opts ...reqOpt) *httptest.ResponseRecorder {
	f.t.Helper()
	return f.do("POST", "/login", form, append([]reqOpt{header("Content-Type", "application/x-www-form-urlencoded")}, opts...)...)
}

func cookieOf(t *testing.T, rec *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == "mull_admin" {
			return c
		}
	}
	t.Fatalf("no mull_admin cookie in %v", rec.Header())
	return nil
}

func withCookie(c *http.Cookie) reqOpt { return func(r *http.Request) { r.AddCookie(c) } }

func TestBrowserLogin(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, token)
		html := header("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")

		// A browser is sent to the login; an API client gets the JSON 401.
		rec := f.do("GET", "/riverui/", "", html)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login?next=/riverui/" {
			t.Fatalf("browser GET /riverui/: %d to %q", rec.Code, rec.Header().Get("Location"))
		}
		expectError(t, f.do("GET", "/riverui/api/jobs?state=discarded", ""), http.StatusUnauthorized, "/login")

		rec = f.do("GET", "/login?next=/riverui/", "")
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<form method="post" action="/login">`) || !strings.Contains(rec.Body.String(), `value="/riverui/"`) {
			t.Fatalf("GET /login: %d %s", rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), "<script") {
			t.Fatal("the login page runs script")
		}

		// A wrong token: the form again, with an error, and no cookie.
		for _, bad := range []string{"token=nope", "token=" + token[:4], "token=" + token + "x", "", "next=/riverui/"} {
			rec = f.loginForm(bad)
			if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "not the admin token") || len(rec.Result().Cookies()) != 0 {
				t.Fatalf("login with %q: %d %v %s", bad, rec.Code, rec.Result().Cookies(), rec.Body)
			}
		}

		rec = f.loginForm("token=" + url.QueryEscape(token) + "&next=" + url.QueryEscape("/riverui/jobs?state=discarded"))
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/riverui/jobs?state=discarded" {
			t.Fatalf("login: %d to %q", rec.Code, rec.Header().Get("Location"))
		}
		c := cookieOf(t, rec)
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.MaxAge <= 0 || c.Path != "/" || strings.Contains(c.Value, token) {
			t.Fatalf("cookie %+v", c)
		}
		riverUIJobIDs(t, f, withCookie(c))
		expect(t, f.do("GET", "/v1/admin/dlq", "", withCookie(c)), http.StatusOK, nil)
		expect(t, f.do("GET", "/riverui/", "", withCookie(c), html), http.StatusOK, nil)

		// Over TLS the cookie is Secure.
		rec = f.loginForm("token="+url.QueryEscape(token), func(r *http.Request) { r.TLS = &tls.ConnectionState{} })
		if !cookieOf(t, rec).Secure {
			t.Fatal("cookie set over TLS is not Secure")
		}

		// Tampered, foreign and expired cookies are refused.
		exp, mac, _ := strings.Cut(c.Value, ".")
		for name, v := range map[string]string{
			"later expiry": "9999999999." + mac,
			"no mac":       exp,
			"bad mac":      exp + ".AAAA",
			"the token":    token,
		} {
			rec := f.do("GET", "/v1/admin/dlq", "", withCookie(&http.Cookie{Name: "mull_admin", Value: v}))
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("cookie %s: %d", name, rec.Code)
			}
		}
		other := f.server(s, "another-token")
		if rec := serve(other, "GET", "/v1/admin/dlq", "", withCookie(c)); rec.Code != http.StatusUnauthorized {
			t.Fatalf("a cookie of another token: %d", rec.Code)
		}
		f.offset.Store(int64(13 * time.Hour))
		expect(t, f.do("GET", "/v1/admin/dlq", "", withCookie(c)), http.StatusUnauthorized, nil)
		f.offset.Store(0)

		// next stays on this server.
		for _, next := range []string{"//evil.example/", "https://evil.example/", `/\evil.example`, "evil.example", "/\r\nSet-Cookie:x", "javascript:alert(1)", ""} {
			rec := f.loginForm("token=" + url.QueryEscape(token) + "&next=" + url.QueryEscape(next))
			if loc := rec.Header().Get("Location"); loc != "/" {
				t.Errorf("next %q: redirected to %q", next, loc)
			}
		}

		// Logout clears the cookie.
		rec = f.do("POST", "/logout", "", withCookie(c))
		if rec.Code != http.StatusSeeOther || cookieOf(t, rec).MaxAge >= 0 {
			t.Fatalf("logout: %d %v", rec.Code, rec.Header())
		}

		// A login from another site is refused.
		rec = f.loginForm("token="+url.QueryEscape(token), header("Origin", "https://evil.example"), header("Sec-Fetch-Site", "cross-site"))
		if rec.Code != http.StatusForbidden || len(rec.Result().Cookies()) != 0 {
			t.Fatalf("cross-site login: %d", rec.Code)
		}
	})
}

func TestHealthzDetailsOnlyForOperator(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, token)
		f.srv.SetWorking(true)
		for name, opts := range map[string][]reqOpt{
			"remote":              {from("203.0.113.5:1234")},
			"remote, wrong token": {from("203.0.113.5:1234"), bearer("nope")},
		} {
			rec := f.do("GET", "/healthz", "", opts...)
			var body map[string]any
			expect(t, rec, http.StatusOK, &body)
			if len(body) != 1 || body["status"] != "ok" {
				t.Errorf("%s: /healthz shows %v, want status only", name, body)
			}
		}
		f.srv.SetWorking(false) // unhealthy: still status only, and 503
		var body map[string]any
		expect(t, f.do("GET", "/healthz", "", from("203.0.113.5:1234")), http.StatusServiceUnavailable, &body)
		if len(body) != 1 || body["status"] != "unhealthy" {
			t.Errorf("remote, unhealthy: /healthz shows %v", body)
		}
		for name, opts := range map[string][]reqOpt{
			"loopback":      nil,
			"remote, token": {from("203.0.113.5:1234"), bearer(token)},
		} {
			var body map[string]any
			expect(t, f.do("GET", "/healthz", "", opts...), http.StatusServiceUnavailable, &body)
			if body["database"] == nil || body["queues"] == nil {
				t.Errorf("%s: /healthz shows %v, want details", name, body)
			}
		}
	})
}
