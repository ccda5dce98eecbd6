package api

import (
	"cmp"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/mullhq/mull/events"
)

// Limits on what any request carries besides its JSON body's own rules.
const (
	// maxParam caps one query parameter or path value, in bytes: the
	// longest is a workspace path (events.MaxPath).
	maxParam = events.MaxPath
	// maxBodyString caps one string of a JSON body, in bytes; fields with
	// their own rules (a memory's text) are tighter.
	maxBodyString = events.MaxText
	// maxBody caps a JSON body other than POST /v1/events's.
	maxBody = 1 << 20
)

// inputOK refuses, before any handler runs, a request whose path or query
// no store would keep faithfully: a NUL (also as %00), invalid UTF-8, a
// control character in a path segment, a malformed query, or a value over
// maxParam bytes. The 400 names the parameter: the query key, or the path
// value's name in the route's pattern ("id"), else "path".
func (s *Server) inputOK(w http.ResponseWriter, r *http.Request) bool {
	if name, problem := s.badPath(r); problem != "" {
		writeField(w, name, problem)
		return false
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeField(w, "query", "malformed: "+err.Error())
		return false
	}
	for key, values := range q {
		if problem := events.CheckName(key, maxParam); problem != "" {
			writeField(w, "query", "a parameter's name "+problem)
			return false
		}
		for _, v := range values {
			if problem := events.CheckText(v, maxParam); problem != "" {
				writeField(w, key, problem)
				return false
			}
		}
	}
	return true
}

// badPath checks each decoded segment of the path, naming it after the
// wildcard of the route it matches.
func (s *Server) badPath(r *http.Request) (name, problem string) {
	_, pattern := s.mux.Handler(r)
	if _, p, ok := strings.Cut(pattern, " "); ok {
		pattern = p
	}
	wild := strings.Split(pattern, "/")
	for i, seg := range strings.Split(r.URL.EscapedPath(), "/") {
		v, err := url.PathUnescape(seg)
		if err != nil {
			return "path", "malformed: " + err.Error()
		}
		if problem := events.CheckName(v, maxParam); problem != "" {
			name := "path"
			if i < len(wild) && strings.HasPrefix(wild[i], "{") {
				name = strings.TrimSuffix(strings.Trim(wild[i], "{}"), "...")
			}
			return name, problem
		}
	}
	return "", ""
}

// checkJSONBody refuses a JSON body holding a string no store keeps
// faithfully, naming its JSON path (see events.CheckJSON); it answers the
// 400 itself.
func checkJSONBody(w http.ResponseWriter, body []byte) bool {
	path, problem := events.CheckJSON(body, maxBodyString)
	if problem == "" {
		return true
	}
	writeField(w, cmp.Or(path, "body"), problem)
	return false
}

// isTooBig reports a body cut by http.MaxBytesReader.
func isTooBig(err error) bool {
	var tooBig *http.MaxBytesError
	return errors.As(err, &tooBig)
}
