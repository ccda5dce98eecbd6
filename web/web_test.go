package web_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A browser without the admin cookie is sent to /login and comes back to
// the page it asked for; logged in, it reads and may act (the layout says
// admin and offers log out). With no admin token, loopback reads only.
func TestPanelLogin(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		anon := e.httpClient(false)
		req, _ := http.NewRequest("GET", e.URL+"/memories?kind=fact", nil)
		req.Header.Set("Accept", "text/html")
		res, err := anon.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/login?next=/memories%3Fkind%3Dfact" {
			t.Fatalf("anonymous: %d to %q, want 303 to /login?next=…", res.StatusCode, loc)
		}
		admin := e.httpClient(true)
		code, body := e.get(admin, "/")
		if code != http.StatusOK || !strings.Contains(body, `aria-current="page">Overview`) || !strings.Contains(body, ">admin<") {
			t.Fatalf("logged in: %d\n%s", code, body)
		}
		if h := res.Header.Get("Content-Security-Policy"); h != "" {
			t.Fatalf("a redirect needs no CSP, got %q", h)
		}

		// With no token, loopback reads, read-only: no forms, and a post
		// is refused.
		open := newEnv(t, s, envOpts{NoToken: true})
		oc := open.httpClient(false)
		code, body = open.get(oc, "/")
		if code != http.StatusOK || !strings.Contains(body, ">read-only<") || strings.Contains(body, ">admin<") {
			t.Fatalf("no token, loopback: %d\n%s", code, body)
		}
		res = open.postForm(oc, "/dlq/retry", url.Values{"kind": {"llm_probe"}})
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("no token, loopback post: %d, want 403", res.StatusCode)
		}
	})
}

// Every panel page forbids inline script and framing; an unknown panel
// path answers in place, and an unknown API path is still the API's 404.
func TestPanelHeadersAndNotFound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		req, _ := http.NewRequest("GET", e.URL+"/", nil)
		req.Header.Set("Accept", "text/html")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Fatalf("CSP %q lacks %q", csp, want)
			}
		}
		if code, body := e.get(c, "/no/such/page"); code != http.StatusNotFound || !strings.Contains(body, `class="error"`) || !strings.Contains(body, "/no/such/page") {
			t.Fatalf("unknown page: %d\n%s", code, body)
		}
		res, err = c.Get(e.URL + "/v1/no-such-route")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		// The API's own mux answers its paths: the panel never does.
		if res.StatusCode != http.StatusNotFound || strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("unknown API route: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
		}
	})
}

// The vendored libraries are the ones VENDOR.md names, byte for byte, and
// are served.
func TestVendoredAssets(t *testing.T) {
	doc, err := os.ReadFile("static/VENDOR.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^\| (\S+\.(?:js|css)) \| .* \| ([0-9a-f]{64}) \|$`).FindAllStringSubmatch(string(doc), -1)
	if len(rows) != 3 {
		t.Fatalf("VENDOR.md lists %d files, want 3", len(rows))
	}
	for _, r := range rows {
		b, err := os.ReadFile("static/" + r[1])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != r[2] {
			t.Errorf("%s: sha256 %s, VENDOR.md says %s", r[1], got, r[2])
		}
	}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		res, err := http.Get(e.URL + "/static/htmx.min.js")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("ETag") == "" {
			t.Fatalf("htmx: %d, etag %q", res.StatusCode, res.Header.Get("ETag"))
		}
	})
}

// The browser logs in through the form and lands on the overview.
func TestPanelBrowserLogin(t *testing.T) {
	needBrowser(t)
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		b := e.browser(t)
		b.do("open the panel", chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible(chromedp.ID("token")))
		if loc := b.location(); !strings.Contains(loc, "/login?next=/") {
			t.Fatalf("without a login the panel went to %s", loc)
		}
		b.login()
		if loc := b.location(); loc != e.URL+"/" {
			t.Fatalf("after the login the browser is at %s", loc)
		}
		b.open("/")
		if got := b.text("main h1"); got != "Overview" {
			t.Fatalf("heading %q", got)
		}
	})
}
