package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
)

// CSRF: a signed double-submit token. The browser holds a random value in
// an HttpOnly, SameSite=Strict cookie; every form carries an HMAC of that
// value under a key only this process knows. Another site can neither read
// the cookie nor compute the HMAC, and a value planted by a sibling host
// is useless without the key. This is on top of the api's cross-origin
// refusal (net/http's CrossOriginProtection on Sec-Fetch-Site and Origin),
// which old browsers do not help with.
//
// The key is made at start: after a restart a page left open must be
// reloaded before its form is sent (the refusal says so).
const (
	csrfCookie = "mull_csrf"
	csrfField  = "csrf"
)

type csrfKeys struct {
	key [32]byte
}

func newCSRFKeys() *csrfKeys {
	k := &csrfKeys{}
	_, _ = rand.Read(k.key[:])
	return k
}

func (k *csrfKeys) sign(v string) string {
	m := hmac.New(sha256.New, k.key[:])
	m.Write([]byte("mull panel csrf\x00" + v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// token is the form token for this browser, setting its cookie first when
// it has none.
func (k *csrfKeys) token(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 22 {
		return k.sign(c.Value)
	}
	var b [18]byte
	_, _ = rand.Read(b[:])
	v := base64.RawURLEncoding.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	// Later renders in this request (an error page after a failed
	// action) see the same value.
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: v})
	return k.sign(v)
}

// valid reports a form whose token matches this browser's cookie.
func (k *csrfKeys) valid(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || len(c.Value) < 22 {
		return false
	}
	got := r.PostForm.Get(csrfField)
	if got == "" {
		got = r.Header.Get("X-CSRF-Token")
	}
	return hmac.Equal([]byte(got), []byte(k.sign(c.Value)))
}
