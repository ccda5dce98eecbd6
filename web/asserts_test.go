package web_test

import (
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// wantIn fails unless body holds every one of wants.
func wantIn(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
	if t.Failed() {
		t.Fatalf("%s:\n%s", what, body)
	}
}

// mustNotContain fails if body holds any of nots.
func mustNotContain(t *testing.T, what, body string, nots ...string) {
	t.Helper()
	for _, w := range nots {
		if strings.Contains(body, w) {
			t.Fatalf("%s holds %q:\n%s", what, w, body)
		}
	}
}

// wantRefused gets path and fails unless it answers code with the error
// shown in place, holding every one of wants.
func (e *env) wantRefused(t *testing.T, c *http.Client, code int, path string, wants ...string) {
	t.Helper()
	got, body := e.get(c, path)
	if got != code || !strings.Contains(body, `class="error"`) {
		t.Fatalf("%s: %d, want %d with the error in place\n%s", path, got, code, body)
	}
	wantIn(t, path, body, wants...)
}

// wantOnly gets path and fails unless its page holds has and not lacks:
// a filter kept one row and left out another.
func (e *env) wantOnly(t *testing.T, c *http.Client, path, has, lacks string) {
	t.Helper()
	_, body := e.get(c, path)
	if !strings.Contains(body, has) || strings.Contains(body, lacks) {
		t.Fatalf("%s: want %q and not %q\n%s", path, has, lacks, body)
	}
}

// wantLinked fails unless body shows each number (as the page writes it)
// as the text of a link to its href: every number links to the rows
// behind it. pairs are href, text, href, text, …
func wantLinked(t *testing.T, what, body string, pairs ...string) {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		href, text := pairs[i], pairs[i+1]
		re := regexp.MustCompile(`<a [^>]*href="` + regexp.QuoteMeta(html.EscapeString(href)) + `"[^>]*>\s*` +
			regexp.QuoteMeta(text) + `\s*</a>`)
		if !re.MatchString(body) {
			t.Errorf("%s: %q is not a link to %s", what, text, href)
		}
	}
	if t.Failed() {
		t.Fatalf("%s:\n%s", what, body)
	}
}

// commas writes n as the panel's num does (1,234).
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// dollars writes a cost as the panel's usd does.
func dollars(v float64) string {
	if v >= 1 || v <= -1 {
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 4, 64)
}
