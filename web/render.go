package web

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// View is what every page template gets: the page's own data under .Data,
// and what the layout needs (who may act, the CSRF token, a flash).
type View struct {
	// Title is the page's title (the <title> and the heading).
	Title string
	// Nav is the menu entry to mark current (see navItems).
	Nav string
	// Access says what the visitor may do; templates show forms only
	// when .Access.Act.
	Access Access
	// CSRF is the token every form sends back (the "csrf" partial).
	CSRF string
	// Flash is the message an action left for this page.
	Flash string
	// Now is the clock's time of the render, for relative times.
	Now time.Time
	// URI is this page's path and query: a form's "back" field.
	URI string
	// Data is the page's own.
	Data any
}

// navItems is the menu, in order: the Nav key, the label and the path.
var navItems = []struct{ Key, Label, Path string }{
	{"overview", "Overview", "/"},
	{"sessions", "Sessions", "/sessions"},
	{"memories", "Memories", "/memories"},
	{"asof", "As of T", "/asof"},
	{"lessons", "Lessons", "/lessons"},
	{"proposals", "Proposals", "/proposals"},
	{"playbooks", "Playbooks", "/playbooks"},
	{"ledger", "Ledger", "/ledger"},
	{"harness", "Harness", "/harness"},
	{"bench", "Benchmarks", "/bench"},
	{"dlq", "Dead letters", "/dlq"},
}

// pages holds one template set per page: the layout, the partials and
// that page's file.
type pages struct {
	byName map[string]*template.Template
}

// parsePages parses templates/layout.html and templates/partials.html into
// a base, then each other templates/*.html into its own clone of the base.
// A page file defines "main" (and may define "fragment", the part an htmx
// request gets).
func parsePages() (*pages, error) {
	base := template.New("layout.html").Funcs(funcs)
	base, err := base.ParseFS(files, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("parse the panel's layout: %w", err)
	}
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range names {
		b := path.Base(n)
		if b == "layout.html" || b == "partials.html" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(files, n)
		if err != nil {
			return nil, fmt.Errorf("parse the panel's %s: %w", b, err)
		}
		p.byName[strings.TrimSuffix(b, ".html")] = t
	}
	return p, nil
}

// render writes page (a templates/ file's name without .html) with data,
// as a whole page, or only its "fragment" for an htmx request when the
// page has one. It renders into a buffer first, so a template error is an
// error page, never half a page.
func (p *Panel) render(w http.ResponseWriter, r *http.Request, status int, page, nav, title string, data any) error {
	t, ok := p.pages.byName[page]
	if !ok {
		return fmt.Errorf("no template %q", page)
	}
	v := View{Title: title, Nav: nav, Access: p.deps.Access(r), CSRF: p.csrf.token(w, r), Flash: takeFlash(w, r),
		Now: p.deps.Now(), URI: r.URL.RequestURI(), Data: data}
	name := "layout"
	if r.Header.Get("HX-Request") == "true" && t.Lookup("fragment") != nil && r.Header.Get("HX-Boosted") == "" {
		name = "fragment"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, v); err != nil {
		return fmt.Errorf("render %s: %w", page, err)
	}
	secureHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
	return nil
}

// page renders with status 200.
func (p *Panel) page(w http.ResponseWriter, r *http.Request, page, nav, title string, data any) error {
	return p.render(w, r, http.StatusOK, page, nav, title, data)
}

// secureHeaders: no inline script or style, nothing from elsewhere, never
// framed, never cached (the pages show private data).
func secureHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// Error is a failure with the HTTP status to show it with.
type Error struct {
	Status int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Errorf makes an *Error.
func Errorf(status int, format string, args ...any) error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...)}
}

type errorView struct {
	Status  int
	Message string
}

// fail shows err in place: inside the layout, or as the error fragment for
// an htmx request. An error that is not an *Error is a 500 and is logged.
func (p *Panel) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		p.deps.Logger.Error("panel page failed", "path", r.URL.Path, "error", err)
		e = &Error{Status: http.StatusInternalServerError, Msg: "mull could not build this page: " + err.Error()}
	}
	if rerr := p.render(w, r, e.Status, "error", "", http.StatusText(e.Status), errorView{Status: e.Status, Message: e.Msg}); rerr != nil {
		p.deps.Logger.Error("panel error page failed", "error", rerr)
		http.Error(w, e.Msg, e.Status)
	}
}

// Pager is a page of a list: ?page=N (from 1), Per rows each. A query asks
// for Limit() rows; Trim drops the extra one and sets HasNext.
type Pager struct {
	Page, Per int
	HasNext   bool
	// URI is the list's path and query, to build the neighbours' links.
	URI string
}

// maxPage caps ?page: no list of the panel's is that deep, and past it
// Offset could overflow to a negative number.
const maxPage = 10_000

// pager reads ?page from r, from 1 to maxPage.
func pager(r *http.Request, per int) Pager {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		n = 1
	}
	n = min(n, maxPage)
	return Pager{Page: n, Per: per, URI: r.URL.RequestURI()}
}

// Offset is the number of rows before this page.
func (g Pager) Offset() int { return (g.Page - 1) * g.Per }

// Limit is one more than a page, to learn whether a next page exists.
func (g Pager) Limit() int { return g.Per + 1 }

// Trim cuts n rows to a page's worth and records whether more exist; it
// returns the count to keep.
func (g *Pager) Trim(n int) int {
	if n > g.Per {
		g.HasNext = true
		return g.Per
	}
	return n
}

// Prev and Next are the neighbours' links ("" when there is none).
func (g Pager) Prev() string {
	if g.Page <= 1 {
		return ""
	}
	return setQuery(g.URI, "page", strconv.Itoa(g.Page-1))
}

func (g Pager) Next() string {
	if !g.HasNext {
		return ""
	}
	return setQuery(g.URI, "page", strconv.Itoa(g.Page+1))
}

// setQuery returns uri with key set to value ("" removes it).
func setQuery(uri, key, value string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	q := u.Query()
	if value == "" {
		q.Del(key)
	} else {
		q.Set(key, value)
	}
	u.RawQuery = q.Encode()
	return u.RequestURI()
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"ago":   ago,
	"exact": exact,
	"num":   num,
	"usd":   usd,
	"pct":   pct,
	"link":  link,
	"qset":  func(uri, key string, value any) string { return setQuery(uri, key, str(value)) },
	"trunc": trunc,
	"json":  toJSON,
	"dict":  dict,
	"add":   func(a, b int) int { return a + b },
	// sessionPath is a session page's path, its id escaped.
	"sessionPath": sessionPath,
	"navItems": func() any {
		return navItems
	},
}

// asTime reads the time types the store returns.
func asTime(v any) (time.Time, bool) {
	switch t := v.(type) {
	case time.Time:
		return t, !t.IsZero()
	case *time.Time:
		if t == nil {
			return time.Time{}, false
		}
		return *t, !t.IsZero()
	case sql.NullTime:
		return t.Time, t.Valid && !t.Time.IsZero()
	}
	return time.Time{}, false
}

// ago renders a time relative to now, with the exact time on hover:
// <time datetime=… title=…>3 h ago</time>. A zero or nil time is "never".
func ago(now time.Time, v any) template.HTML {
	t, ok := asTime(v)
	if !ok {
		return `<span class="muted">never</span>`
	}
	return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339) + `" title="` + exact(t) + `">` +
		template.HTMLEscapeString(relative(now, t)) + `</time>`)
}

// relative says how long before (or after) now t is, in its largest unit.
func relative(now, t time.Time) string {
	d := now.Sub(t)
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, " from now"
	}
	switch {
	case d < 45*time.Second:
		if suffix == " ago" {
			return "just now"
		}
		return "in seconds"
	case d < 90*time.Minute:
		return strconv.Itoa(int(math.Round(d.Minutes()))) + " min" + suffix
	case d < 36*time.Hour:
		return strconv.Itoa(int(math.Round(d.Hours()))) + " h" + suffix
	case d < 60*24*time.Hour:
		return strconv.Itoa(int(math.Round(d.Hours()/24))) + " days" + suffix
	}
	return t.UTC().Format("2006-01-02")
}

// exact is a time in UTC to the second, or "" for a zero time.
func exact(v any) string {
	t, ok := asTime(v)
	if !ok {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// num writes an integer with thousands separators (1,234,567).
func num(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case int32:
		n = int64(x)
	case float64:
		n = int64(math.Round(x))
	default:
		return fmt.Sprint(v)
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// usd writes a cost in dollars: cents for a dollar and more, four places
// under it (mull's jobs cost fractions of a cent).
func usd(v float64) string {
	if math.Abs(v) >= 1 {
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 4, 64)
}

// pct writes a share (0..1) as a percentage with one decimal.
func pct(v float64) string {
	return strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
}

// link builds path?k=v&… from pairs, leaving out empty and zero values.
func link(p string, kv ...any) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		k, v := str(kv[i]), str(kv[i+1])
		if v != "" && v != "0" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return p
	}
	return p + "?" + q.Encode()
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case time.Time:
		if x.IsZero() {
			return ""
		}
		return x.UTC().Format(time.RFC3339)
	}
	return fmt.Sprint(v)
}

// trunc cuts s to n runes, with an ellipsis.
func trunc(n int, s string) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// toJSON is v as JSON text, for a data- attribute (html/template escapes
// it for the attribute).
func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// dict builds a map from pairs, to pass several values to a partial.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, errors.New("dict: odd number of arguments")
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[str(kv[i])] = kv[i+1]
	}
	return m, nil
}

// Flash messages: a short-lived cookie an action sets and the next page
// shows once.
const flashCookie = "mull_flash"

func setFlash(w http.ResponseWriter, r *http.Request, msg string) {
	if msg == "" {
		return
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: url.QueryEscape(trunc(300, msg)), Path: "/", MaxAge: 60,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

func takeFlash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(flashCookie)
	if err != nil || c.Value == "" {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	msg, err := url.QueryUnescape(c.Value)
	if err != nil {
		return ""
	}
	return msg
}

// staticHandler serves the embedded assets with an ETag of their content,
// so a browser revalidates cheaply and never runs a stale script.
func staticHandler(fsys fs.FS) http.Handler {
	etags := map[string]string{}
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := fs.ReadFile(fsys, p); err == nil {
				sum := sha256.Sum256(b)
				etags[p] = `"` + hex.EncodeToString(sum[:8]) + `"`
			}
		}
		return nil
	})
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag, ok := etags[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok || strings.HasSuffix(r.URL.Path, ".md") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", tag)
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.Header.Get("If-None-Match") == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		files.ServeHTTP(w, r)
	})
}
