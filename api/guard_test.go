package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// guardRoutes are the routes a web page must not drive: every
// state-changing route in inputRoutes (so a new route is covered once it
// is listed there, which TestEveryRouteIsListed enforces), River UI's
// pages and a River UI write.
func guardRoutes() []inputRoute {
	var out []inputRoute
	for _, rt := range inputRoutes {
		if rt.method() != http.MethodGet || strings.HasPrefix(rt.pattern, "GET /riverui") {
			out = append(out, rt)
		}
	}
	return append(out, inputRoute{pattern: "POST /riverui/api/jobs/cancel", body: `{"ids":["1"]}`})
}

// TestNoWebPageCanDrive: with no tokens set, a foreign Origin, a text/plain
// body or a foreign Host is refused on every state-changing route and on
// /riverui/, and the same request as JSON from loopback is not.
func TestNoWebPageCanDrive(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := inputServer(t, s)
		for _, rt := range guardRoutes() {
			target := rt.target(rt.path, rt.query)
			body := rt.body
			unsafe := rt.method() != http.MethodGet
			if unsafe && body == "" {
				body = "{}"
			}
			try := func(what string, want int, opts ...reqOpt) {
				t.Helper()
				rec := serve(srv, rt.method(), target, body, opts...)
				var e errorJSON
				if rec.Code != want || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" {
					t.Errorf("%s %s: %d %s, want %d with an error message", rt.pattern, what, rec.Code, rec.Body, want)
				}
			}
			for _, o := range []struct {
				name string
				opts []reqOpt
			}{
				{"cross-site fetch", []reqOpt{header("Origin", "https://evil.example"), header("Sec-Fetch-Site", "cross-site")}},
				{"same-site fetch", []reqOpt{header("Origin", "http://evil.localhost:7788"), header("Sec-Fetch-Site", "same-site")}},
				{"foreign Origin only", []reqOpt{header("Origin", "https://evil.example")}},
				{"null Origin", []reqOpt{header("Origin", "null")}},
			} {
				try(o.name, http.StatusForbidden, o.opts...)
			}
			for _, host := range []string{"evil.example", "evil.example:7788", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.1:7788"} {
				try("Host "+host, http.StatusMisdirectedRequest, func(r *http.Request) { r.Host = host })
			}
			if unsafe {
				for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1", "application/jsonx", "garbage/"} {
					if strings.HasPrefix(ct, "application/x-www-form") && strings.Contains(rt.pattern, "/log") {
						continue // the login form's own type
					}
					try("Content-Type "+ct, http.StatusUnsupportedMediaType, header("Content-Type", ct))
				}
				try("a body with no Content-Type", http.StatusUnsupportedMediaType, func(r *http.Request) { r.Header.Del("Content-Type") })
			}
			// JSON from loopback, same-origin: none of the guard's refusals.
			for _, opts := range [][]reqOpt{nil, {header("Origin", "http://127.0.0.1:7788"), header("Sec-Fetch-Site", "same-origin")}, {header("Content-Type", "application/json; charset=utf-8")}} {
				rec := serve(srv, rt.method(), target, body, opts...)
				if rec.Code == http.StatusForbidden || rec.Code == http.StatusUnsupportedMediaType || rec.Code == http.StatusMisdirectedRequest {
					t.Errorf("%s as JSON from loopback: %d %s", rt.pattern, rec.Code, rec.Body)
				}
			}
		}
		// River UI's page posts JSON as text/plain: fine from its own origin only.
		rec := serve(srv, "POST", "/riverui/api/jobs/cancel", `{"ids":["1"]}`, header("Content-Type", "text/plain;charset=UTF-8"), header("Sec-Fetch-Site", "same-origin"), header("Origin", "http://127.0.0.1:7788"))
		if rec.Code == http.StatusUnsupportedMediaType || rec.Code == http.StatusForbidden {
			t.Errorf("River UI's own cancel: %d %s", rec.Code, rec.Body)
		}
		// A bodyless write (PUT /riverui/api/queues/x/pause, POST …/verify) needs no type.
		rec = serve(srv, "PUT", "/riverui/api/queues/default/pause", "")
		if rec.Code == http.StatusUnsupportedMediaType {
			t.Errorf("bodyless PUT: %d %s", rec.Code, rec.Body)
		}
		// allowed loopback spellings
		for _, host := range []string{"localhost", "localhost:7788", "127.0.0.1", "127.1.2.3:80", "[::1]:7788", "[::1]"} {
			rec := serve(srv, "GET", "/healthz", "", func(r *http.Request) { r.Host = host })
			if rec.Code == http.StatusMisdirectedRequest {
				t.Errorf("Host %s: 421", host)
			}
		}
	})
}

type errorJSON struct {
	Error string `json:"error"`
}
