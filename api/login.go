package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The browser login: a form that takes the admin token and sets a cookie,
// so River UI and the admin routes work in a browser when a token is set.
const (
	loginPath  = "/login"
	logoutPath = "/logout"
	// cookieName holds a login: its expiry and an HMAC of it keyed by the
	// admin token, never the token itself. Changing the token ends every
	// login.
	cookieName = "mull_admin"
	// loginTTL is how long a login lasts.
	loginTTL = 12 * time.Hour
)

func (s *Server) routesLogin() {
	s.mux.HandleFunc("GET /login", s.loginForm)
	s.mux.HandleFunc("POST /login", s.login)
	s.mux.HandleFunc("POST /logout", s.logout)
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mull: log in</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: sans-serif; max-width: 28em; margin: 4em auto">
<h1>mull admin</h1>
{{if .NoToken}}<p>No admin token is configured (MULL_ADMIN_TOKEN), so the admin routes and River UI answer on loopback without a login.</p>
<p><a href="{{.Next}}">Continue</a></p>
{{else}}{{if .Error}}<p role="alert" style="color: #b00">{{.Error}}</p>{{end}}
<form method="post" action="/login">
<input type="hidden" name="next" value="{{.Next}}">
<label for="token">Admin token (MULL_ADMIN_TOKEN)</label><br>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus style="width: 100%"><br><br>
<button type="submit">Log in</button>
</form>{{end}}
</body></html>
`))

type loginView struct {
	Next, Error string
	NoToken     bool
}

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	s.renderLogin(w, http.StatusOK, loginView{Next: localNext(r.URL.Query().Get("next"))})
}

func (s *Server) renderLogin(w http.ResponseWriter, status int, v loginView) {
	v.NoToken = s.deps.AdminToken == ""
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The page is never framed (clickjacking) and runs no script.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_ = loginPage.Execute(w, v)
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "cannot read the login form: "+err.Error())
		return
	}
	next := localNext(r.PostForm.Get("next"))
	tok := s.deps.AdminToken
	if tok == "" {
		s.renderLogin(w, http.StatusOK, loginView{Next: next})
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("token")), []byte(tok)) != 1 {
		s.renderLogin(w, http.StatusUnauthorized, loginView{Next: next, Error: "That is not the admin token."})
		return
	}
	exp := s.deps.Now().Add(loginTTL)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: s.cookieValue(exp), Path: "/", Expires: exp, MaxAge: int(loginTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, loginPath, http.StatusSeeOther)
}

// cookieValue is "expiry.mac": the expiry in Unix seconds and its
// HMAC-SHA256 keyed by the admin token.
func (s *Server) cookieValue(exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	return e + "." + base64.RawURLEncoding.EncodeToString(s.cookieMAC(e))
}

func (s *Server) cookieMAC(exp string) []byte {
	m := hmac.New(sha256.New, []byte(s.deps.AdminToken))
	m.Write([]byte("mull admin login\x00" + exp))
	return m.Sum(nil)
}

// loggedIn reports a valid, unexpired login cookie.
func (s *Server) loggedIn(r *http.Request) bool {
	if s.deps.AdminToken == "" {
		return false
	}
	c, err := r.Cookie(cookieName)
	if err != nil {
		return false
	}
	e, mac, ok := strings.Cut(c.Value, ".")
	if !ok {
		return false
	}
	sec, err := strconv.ParseInt(e, 10, 64)
	if err != nil || !s.deps.Now().Before(time.Unix(sec, 0)) {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	return err == nil && hmac.Equal(got, s.cookieMAC(e))
}

// localNext keeps a post-login target on this server: a path starting
// with one "/" (not "//" or "/\", which browsers read as another host),
// with no scheme or host. Anything else is the panel's overview.
func localNext(next string) string {
	const home = "/"
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, `/\`) || strings.ContainsAny(next, "\r\n\t\\") {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return home
	}
	return next
}

// wantsHTML reports a browser navigating (not River UI's own API calls,
// which ask for JSON).
func wantsHTML(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.Contains(r.Header.Get("Accept"), "text/html")
}
