package api

import (
	"mime"
	"net/http"
	"strings"
)

// guard refuses, before any route runs, what a web page open in the
// user's browser could send: a Host that is neither a loopback name nor an
// http.allowed_hosts entry (421: DNS rebinding), a cross-origin browser
// request (403, via net/http's CrossOriginProtection; on the admin routes,
// /riverui/, /login and the panel's pages for every method), and a
// state-changing request whose body is not JSON (415: an HTML form or a
// no-CORS fetch can only send form or text/plain bodies; the panel's own
// forms, /login and /logout take form bodies, from the same origin only,
// and the panel checks its CSRF token too). It answers the refusal itself.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) bool {
	if !s.deps.Config.HTTP.HostAllowed(r.Host) {
		writeError(w, http.StatusMisdirectedRequest, "Host "+quoteHost(r.Host)+" is not this server's: mull answers loopback names (localhost, 127.0.0.1, [::1]) and http.allowed_hosts (MULL_HTTP_ALLOWED_HOSTS) only")
		return false
	}
	check := r
	if strictOrigin(r.URL.Path) && !isUnsafe(r.Method) {
		// CrossOriginProtection lets safe methods through; these routes
		// show admin data or are River UI, so reads are checked too.
		check = r.Clone(r.Context())
		check.Method = http.MethodPost
	}
	if err := s.xorigin.Check(check); err != nil {
		writeError(w, http.StatusForbidden, "cross-origin request refused: "+err.Error()+"; open mull's own pages directly instead")
		return false
	}
	if isUnsafe(r.Method) {
		if problem := s.contentTypeProblem(r); problem != "" {
			writeError(w, http.StatusUnsupportedMediaType, problem)
			return false
		}
	}
	return true
}

func isUnsafe(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// strictOrigin says which paths refuse cross-origin reads too.
func strictOrigin(path string) bool {
	return strings.HasPrefix(path, "/riverui") || strings.HasPrefix(path, "/v1/admin/") || path == loginPath ||
		panelPath(path) && !strings.HasPrefix(path, "/static/")
}

// contentTypeProblem says why a state-changing request's body type is
// refused, or "" when it is fine: application/json (charset, if given,
// utf-8), or no Content-Type and no body. POST /login and /logout take the
// login form instead. River UI's own page posts JSON labelled text/plain;
// that is accepted from the same origin only (Sec-Fetch-Site, which no page
// can forge), so a curl or another site's page still cannot.
func (s *Server) contentTypeProblem(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	form := r.URL.Path == loginPath || r.URL.Path == logoutPath || panelPath(r.URL.Path)
	want := "application/json"
	if form {
		want = "application/x-www-form-urlencoded"
	}
	if ct == "" {
		if r.ContentLength == 0 {
			return ""
		}
		return "a body needs Content-Type: " + want
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "Content-Type " + quoteHost(ct) + " is malformed; want " + want
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return "charset " + quoteHost(cs) + " is not supported; want " + want + "; charset=utf-8"
	}
	switch {
	case mt == want, form && mt == "application/json":
		return ""
	case mt == "text/plain" && strings.HasPrefix(r.URL.Path, "/riverui/") && r.Header.Get("Sec-Fetch-Site") == "same-origin":
		return ""
	}
	return "Content-Type " + quoteHost(mt) + " is refused on " + r.Method + " " + r.URL.Path + "; want " + want
}

// quoteHost quotes a header value for an error message, cut to a sane
// length.
func quoteHost(v string) string {
	if len(v) > 100 {
		v = v[:100] + "…"
	}
	return `"` + strings.ToValidUTF8(v, "?") + `"`
}
