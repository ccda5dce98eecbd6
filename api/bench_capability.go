package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/mullhq/mull/benchcap"
)

// bearer is the request's bearer token, "" when it has none.
func bearerToken(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// cellClaims verifies the request's benchmark cell capability. ok is
// false when the request carries none; err says why one it carries is
// refused (tampered, expired, malformed, or its cell ended: a 401), or
// that the key or the cell's job could not be read. A capability that
// verifies is good only while the job attempt that minted it runs
// (benchcap.Live: one read of river_job by id per request), so nothing a
// cell leaves behind can use it once the cell is over.
func (s *Server) cellClaims(ctx context.Context, r *http.Request) (c benchcap.Claims, ok bool, err error) {
	tok := bearerToken(r)
	if !benchcap.Is(tok) {
		return benchcap.Claims{}, false, nil
	}
	if c, err = s.caps.Verify(ctx, tok, s.deps.Now()); err != nil {
		return c, true, err
	}
	if err := benchcap.Live(ctx, s.deps.Store, c); err != nil {
		return c, true, err
	}
	return c, true, nil
}

// capabilityRefused says whether err is the capability's fault (401) or
// the server's (the key or the cell's job could not be read: 500).
func capabilityRefused(err error) bool {
	return errors.Is(err, benchcap.ErrMalformed) || errors.Is(err, benchcap.ErrTampered) || errors.Is(err, benchcap.ErrExpired) ||
		errors.Is(err, benchcap.ErrEnded)
}

// cellOrAdmin guards a benchmark cell's snapshot: a cell's capability
// reads exactly its own snapshot ({id}), and the admin any. The general
// API token does not: the plugins of ordinary sessions carry it and have
// no business with a run's snapshots, and the cell that does is given its
// capability instead (an operator reads snapshots with the admin token,
// here or at /v1/admin/bench/snapshots/{id}). A token that claims to be a
// capability is checked strictly, however the server's admin is set up,
// and only while its cell's job attempt runs (cellClaims).
func (s *Server) cellOrAdmin(h http.HandlerFunc) http.Handler {
	admin := s.admin(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok, err := s.cellClaims(r.Context(), r)
		switch {
		case !ok:
			admin.ServeHTTP(w, r)
		case err != nil && capabilityRefused(err):
			w.Header().Set("WWW-Authenticate", `Bearer realm="mull bench cell"`)
			writeError(w, http.StatusUnauthorized, err.Error())
		case err != nil:
			writeError(w, http.StatusInternalServerError, err.Error())
		case c.Snapshot != r.PathValue("id"):
			writeError(w, http.StatusForbidden, "this bench capability is for snapshot "+c.Snapshot+" (run "+c.Run+"), not "+r.PathValue("id"))
		default:
			h(w, r)
		}
	})
}
