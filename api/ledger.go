package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mullhq/mull/negledger"
)

// routesLedger mounts the negative ledger (seed 003): the agent's routes
// the DSH plugin calls around every tool call (behind the API token, like
// /v1/tasks), and the operator's, the same as `mull ledger` (behind the
// admin token).
func (s *Server) routesLedger() {
	s.mux.Handle("POST /v1/ledger/check", s.apiAuth(s.withLedger(s.ledgerCheck)))
	s.mux.Handle("POST /v1/ledger/observe", s.apiAuth(s.withLedger(s.ledgerObserve)))
	s.mux.Handle("POST /v1/ledger/fs", s.apiAuth(s.withLedger(s.ledgerFS)))
	s.mux.Handle("POST /v1/ledger/facts", s.apiAuth(s.withLedger(s.ledgerRecord)))
	s.mux.Handle("GET /v1/ledger/policy", s.apiAuth(s.withLedger(s.ledgerPolicy)))
	s.mux.Handle("GET /v1/admin/ledger/facts", s.admin(s.withLedger(s.ledgerList)))
	s.mux.Handle("GET /v1/admin/ledger/facts/{id}", s.admin(s.withLedger(s.ledgerShow)))
	s.mux.Handle("GET /v1/admin/ledger/stale", s.admin(s.withLedger(s.ledgerStale)))
	s.mux.Handle("GET /v1/admin/ledger/stats", s.admin(s.withLedger(s.ledgerStats)))
	s.mux.Handle("POST /v1/admin/ledger/facts/{id}/resolve", s.admin(s.withLedger(s.ledgerResolve)))
}

func (s *Server) withLedger(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.deps.Negledger == nil {
			writeError(w, http.StatusServiceUnavailable, "the negative ledger is not configured on this server")
			return
		}
		h(w, r)
	}
}

// writeLedgerError answers the service's errors: 400 a bad field, 404 an
// unknown fact, 503 with Retry-After: 1 a fact that kept changing under
// the request (the plugin's retry, or its unreachable rule, takes over),
// 500 anything else.
func writeLedgerError(w http.ResponseWriter, err error) {
	var fe *negledger.FieldError
	switch {
	case errors.As(err, &fe):
		writeField(w, fe.Field, fe.Problem)
	case errors.Is(err, negledger.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, negledger.ErrConflict):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "ledger: "+err.Error())
	}
}

// writeCompact answers the agent's hot-path routes: one JSON line, no
// indentation to build.
func writeCompact(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encode: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// decodeLedger is decodeBody for the ledger's routes, whose callers are
// programs: a decoding error is a 400 with the field it is about (an
// unknown field, a wrong type, a bad time) in the body's "field".
func decodeLedger(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := readJSONBody(w, r)
	if !ok {
		return false
	}
	if err := strictDecode(body, v); err != nil {
		field, problem := jsonField(err)
		if field == "event" || field == "time" {
			field = "body"
		}
		writeField(w, field, problem)
		return false
	}
	return true
}

// ledgerCheck is POST /v1/ledger/check: before a tool call runs.
func (s *Server) ledgerCheck(w http.ResponseWriter, r *http.Request) {
	var in negledger.CheckRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	out, err := s.deps.Negledger.Check(r.Context(), in)
	s.ledgerM.checked(out, err)
	if err != nil {
		writeLedgerError(w, err)
		return
	}
	writeCompact(w, http.StatusOK, out)
}

// ledgerObserve is POST /v1/ledger/observe: after it ran.
func (s *Server) ledgerObserve(w http.ResponseWriter, r *http.Request) {
	var in negledger.ObserveRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	out, err := s.deps.Negledger.Observe(r.Context(), in)
	s.ledgerM.observed(out, err)
	if err != nil {
		writeLedgerError(w, err)
		return
	}
	writeCompact(w, http.StatusOK, out)
}

// ledgerFS is POST /v1/ledger/fs: DSH's fs/observed events.
func (s *Server) ledgerFS(w http.ResponseWriter, r *http.Request) {
	var in negledger.FSRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	out, err := s.deps.Negledger.ObserveFS(r.Context(), in)
	if err != nil {
		writeLedgerError(w, err)
		return
	}
	if out.Staled == nil {
		out.Staled = []int64{}
	}
	writeCompact(w, http.StatusOK, out)
}

// ledgerRecord is POST /v1/ledger/facts: an explicit fact with its
// evidence; 201 with the fact.
func (s *Server) ledgerRecord(w http.ResponseWriter, r *http.Request) {
	var in negledger.RecordRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	f, err := s.deps.Negledger.Record(r.Context(), in)
	if err != nil {
		writeLedgerError(w, err)
		return
	}
	writeCompact(w, http.StatusCreated, map[string]any{"fact": f})
}

// ledgerPolicy is GET /v1/ledger/policy?workspace=W.
func (s *Server) ledgerPolicy(w http.ResponseWriter, r *http.Request) {
	ws := r.URL.Query().Get("workspace")
	if ws == "" {
		writeField(w, "workspace", "required (the DSH cwd)")
		return
	}
	writeCompact(w, http.StatusOK, s.deps.Negledger.PolicyFor(ws))
}
