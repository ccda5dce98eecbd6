package web_test

import (
	"html"
	"regexp"
	"strconv"
	"testing"
)

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
