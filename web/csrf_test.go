package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// A form is accepted with the token signed for this browser's cookie, and
// refused without it, with another browser's token, or from a visitor who
// may read but not act.
func TestCSRF(t *testing.T) {
	act := true
	p, err := New(Deps{Access: func(*http.Request) Access { return Access{Read: true, Act: act, Why: "log in"} }})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	p.post("/test-action", func(w http.ResponseWriter, r *http.Request) error {
		ran++
		return p.done(w, r, "/", "done")
	})
	// A page gives this browser its cookie and token.
	rec := httptest.NewRecorder()
	tok := p.csrf.token(rec, httptest.NewRequest("GET", "/", nil))
	cookie := rec.Result().Cookies()[0]
	other := httptest.NewRecorder()
	otherTok := p.csrf.token(other, httptest.NewRequest("GET", "/", nil))

	post := func(token string, c *http.Cookie) int {
		form := url.Values{"csrf": {token}, "back": {"/memories"}}
		r := httptest.NewRequest("POST", "/test-action", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c != nil {
			r.AddCookie(c)
		}
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		if w.Code == http.StatusSeeOther && w.Header().Get("Location") != "/memories" {
			t.Fatalf("back to %q", w.Header().Get("Location"))
		}
		return w.Code
	}
	for _, tc := range []struct {
		name   string
		token  string
		cookie *http.Cookie
		want   int
	}{
		{"no token", "", cookie, http.StatusForbidden},
		{"no cookie", tok, nil, http.StatusForbidden},
		{"another browser's token", otherTok, cookie, http.StatusForbidden},
		{"a forged token", strings.Repeat("A", len(tok)), cookie, http.StatusForbidden},
		{"its own token", tok, cookie, http.StatusSeeOther},
	} {
		if got := post(tc.token, tc.cookie); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if ran != 1 {
		t.Fatalf("the action ran %d times, want 1", ran)
	}
	act = false
	if got := post(tok, cookie); got != http.StatusForbidden || ran != 1 {
		t.Fatalf("read-only visitor: %d, ran %d", got, ran)
	}
}
