package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// routesHarness mounts harness refinement (seed 004): the agent's routes
// the DSH plugin calls (behind the API token; the session must be one mull
// has events from, and its workspace is the session's), and the
// operator's, the same as `mull harness` (behind the admin token).
func (s *Server) routesHarness() {
	s.mux.Handle("GET /v1/harness/projection", s.apiAuth(s.withHarness(s.harnessProjection)))
	s.mux.Handle("POST /v1/harness/injections", s.apiAuth(s.withHarness(s.harnessInjections)))
	s.mux.Handle("GET /v1/harness/skills", s.apiAuth(s.withHarness(s.harnessSkills)))
	s.mux.Handle("POST /v1/harness/refine", s.apiAuth(s.withHarness(s.harnessRefine)))
	s.mux.Handle("GET /v1/harness/refine/{job_id}", s.apiAuth(s.withHarness(s.harnessRefineStatus)))
	s.mux.Handle("GET /v1/harness/wrapup", s.apiAuth(s.withHarness(s.harnessWrapup)))
	s.mux.Handle("POST /v1/harness/promote", s.apiAuth(s.withHarness(s.harnessPromote)))
	s.routesHarnessAdmin()
}

func (s *Server) withHarness(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.deps.Harness == nil {
			writeError(w, http.StatusServiceUnavailable, "harness refinement is not configured on this server")
			return
		}
		h(w, r)
	}
}

// writeHarnessError answers the service's errors: 400 a bad field (named
// as the request names it), 404 an unknown entry, refinement, review or
// session, 409 a deterministic conflict with the seed's message ("global
// id conflict"), 500 anything else.
func writeHarnessError(w http.ResponseWriter, err error) {
	var fe *harnesses.FieldError
	switch {
	case errors.As(err, &fe):
		writeField(w, fe.Field, fe.Problem)
	case errors.Is(err, harnesses.ErrNotFound):
		writeError(w, http.StatusNotFound, strings.TrimSuffix(err.Error(), ": "+store.ErrNotFound.Error()))
	case errors.Is(err, harnesses.ErrConflict):
		writeError(w, http.StatusConflict, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "harness: "+err.Error())
	}
}

// knownSession is the agent routes' session check: the session is
// required and must be one mull has events from (404 otherwise, as the
// ledger's explicit facts), so an agent reads and writes only a store it
// owns. It answers the error itself.
func (s *Server) knownSession(w http.ResponseWriter, r *http.Request, id string) (store.Session, bool) {
	if strings.TrimSpace(id) == "" {
		writeField(w, "session", "required: the DSH session id")
		return store.Session{}, false
	}
	sess, err := s.deps.Store.GetSession(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no session %q: mull has no events from it yet", id))
		return sess, false
	case err != nil:
		writeError(w, http.StatusInternalServerError, "read session: "+err.Error())
		return sess, false
	}
	return sess, true
}

// quoteETag makes the service's tag (16 hex digits) an HTTP entity tag,
// quoted as RFC 9110 wants and as the digest's is.
func quoteETag(tag string) string {
	if strings.HasPrefix(tag, `"`) {
		return tag
	}
	return `"` + tag + `"`
}

// tagMatch is etagMatch that also takes the tag unquoted, as a client that
// stored the body's etag without its quotes may send it.
func tagMatch(header, etag string) bool {
	if etagMatch(header, etag) {
		return true
	}
	for _, t := range strings.Split(header, ",") {
		if quoteETag(strings.TrimPrefix(strings.TrimSpace(t), "W/")) == etag {
			return true
		}
	}
	return false
}

// writeTagged answers a body carrying etag with it as the ETag header, or
// 304 when If-None-Match names it: the plugin re-injects only on change.
func writeTagged(w http.ResponseWriter, r *http.Request, etag string, v any) {
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	if tagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeCompact(w, http.StatusOK, v)
}

// harnessProjection is GET /v1/harness/projection?session=S[&query=Q]:
// the ranked harness the agent is shown, with its ETag.
func (s *Server) harnessProjection(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sess, ok := s.knownSession(w, r, q.Get("session"))
	if !ok {
		return
	}
	p, err := s.deps.Harness.Projection(r.Context(), sess.ID, q.Get("query"))
	if err != nil {
		writeHarnessError(w, err)
		return
	}
	if p.Keys == nil {
		p.Keys = []string{}
	}
	p.ETag = quoteETag(p.ETag)
	writeTagged(w, r, p.ETag, p)
}

// injectionsRequest is POST /v1/harness/injections's body: the projection
// keys that reached the session's context.
type injectionsRequest struct {
	Session string   `json:"session"`
	Keys    []string `json:"keys"`
}

// MaxInjectionKeys caps one injections report: a projection shows at most
// harness.max_injected_per_kind of each of four kinds, far fewer.
const MaxInjectionKeys = 200

// harnessInjections is POST /v1/harness/injections: 204; unknown keys are
// ignored.
func (s *Server) harnessInjections(w http.ResponseWriter, r *http.Request) {
	var in injectionsRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	if len(in.Keys) > MaxInjectionKeys {
		writeField(w, "keys", fmt.Sprintf("at most %d, got %d", MaxInjectionKeys, len(in.Keys)))
		return
	}
	sess, ok := s.knownSession(w, r, in.Session)
	if !ok {
		return
	}
	if err := s.deps.Harness.RecordInjections(r.Context(), sess.ID, in.Keys); err != nil {
		writeHarnessError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// harnessSkills is GET /v1/harness/skills?session=S: the SKILL.md bundles
// the session's DSH should have, with an ETag.
func (s *Server) harnessSkills(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.knownSession(w, r, r.URL.Query().Get("session"))
	if !ok {
		return
	}
	sk, err := s.deps.Harness.Skills(r.Context(), sess.ID, sess.Workspace)
	if err != nil {
		writeHarnessError(w, err)
		return
	}
	if sk.Skills == nil {
		sk.Skills = []harnesses.Skill{}
	}
	sk.ETag = quoteETag(sk.ETag)
	writeTagged(w, r, sk.ETag, sk)
}

// harnessWrapup is GET /v1/harness/wrapup?session=S: the deterministic
// keep/promote/archive suggestions for the session's local entries.
func (s *Server) harnessWrapup(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.knownSession(w, r, r.URL.Query().Get("session"))
	if !ok {
		return
	}
	sug, err := s.deps.Harness.Wrapup(r.Context(), sess.ID)
	if err != nil {
		writeHarnessError(w, err)
		return
	}
	if sug == nil {
		sug = []harness.Suggestion{}
	}
	writeCompact(w, http.StatusOK, map[string]any{"suggestions": sug})
}

// promoteRequest is POST /v1/harness/promote's body.
type promoteRequest struct {
	Session string `json:"session"`
	ID      string `json:"id"`
}

// harnessPromote is POST /v1/harness/promote {session, id}: a copy of the
// session's local entry into the global store. 409 with the seed's message
// when the global store has the id ("global id conflict").
func (s *Server) harnessPromote(w http.ResponseWriter, r *http.Request) {
	var in promoteRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	if strings.TrimSpace(in.ID) == "" {
		writeField(w, "id", "required: the local entry's id")
		return
	}
	sess, ok := s.knownSession(w, r, in.Session)
	if !ok {
		return
	}
	out, err := s.deps.Harness.Promote(r.Context(), sess.ID, in.ID, harnesses.ByAgent)
	s.writeApplied(w, out, err)
}

// writeApplied answers an apply: 200 {refinement}, or 202
// {pending_proposal} when harness.require_global_approval holds it.
func (s *Server) writeApplied(w http.ResponseWriter, out harnesses.Applied, err error) {
	switch {
	case err != nil:
		writeHarnessError(w, err)
	case out.Pending != "":
		writeJSON(w, http.StatusAccepted, map[string]any{"pending_proposal": out.Pending,
			"follow": "mull proposals show " + out.Pending + " / POST /v1/admin/proposals/" + out.Pending + "/accept"})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"refinement": out.Refinement})
	}
}
