package api

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/negledger"
)

// The operator's ledger routes (routesLedger mounts them behind the admin
// token): the same as `mull ledger`.

// ledgerFilter reads workspace, status and limit (1 to 1000, default 100)
// and answers 400 itself for a bad one.
func ledgerFilter(w http.ResponseWriter, r *http.Request) (negledger.Filter, bool) {
	q := r.URL.Query()
	f := negledger.Filter{Workspace: q.Get("workspace"), Status: ledger.Status(q.Get("status")), Limit: 100}
	if f.Status != "" && !slices.Contains(LedgerStatuses, f.Status) {
		writeField(w, "status", "want one of active, stale, resolved, superseded")
		return f, false
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeField(w, "limit", "must be a whole number between 1 and 1000")
			return f, false
		}
		f.Limit = n
	}
	return f, true
}

// LedgerStatuses are the statuses a fact list filters on.
var LedgerStatuses = []ledger.Status{ledger.Active, ledger.Stale, ledger.Resolved, ledger.Superseded}

// ledgerList is GET /v1/admin/ledger/facts?workspace=&status=&limit=.
func (s *Server) ledgerList(w http.ResponseWriter, r *http.Request) {
	f, ok := ledgerFilter(w, r)
	if !ok {
		return
	}
	s.writeFacts(w, r, f)
}

// ledgerStale is GET /v1/admin/ledger/stale?workspace=: the current facts
// whose preconditions changed.
func (s *Server) ledgerStale(w http.ResponseWriter, r *http.Request) {
	f, ok := ledgerFilter(w, r)
	if !ok {
		return
	}
	f.Status, f.CurrentOnly = ledger.Stale, true
	s.writeFacts(w, r, f)
}

func (s *Server) writeFacts(w http.ResponseWriter, r *http.Request, f negledger.Filter) {
	facts, err := s.deps.Negledger.List(r.Context(), f)
	if err != nil {
		writeLedgerError(w, err)
		return
	}
	if facts == nil {
		facts = []ledger.Fact{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"facts": facts})
}

// factID reads the {id} path value, answering 400 itself.
func factID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeField(w, "id", "must be a fact's id, a whole number from 1")
		return 0, false
	}
	return id, true
}

// ledgerShow is GET /v1/admin/ledger/facts/{id}: one fact with its lease.
func (s *Server) ledgerShow(w http.ResponseWriter, r *http.Request) {
	id, ok := factID(w, r)
	if !ok {
		return
	}
	f, err := s.deps.Negledger.Get(r.Context(), id)
	if err != nil {
		writeLedgerError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"fact": f})
}

// ledgerStats is GET /v1/admin/ledger/stats?workspace=: the seed's three
// honest counters, no token estimate.
func (s *Server) ledgerStats(w http.ResponseWriter, r *http.Request) {
	sum, err := s.deps.Negledger.Stats(r.Context(), r.URL.Query().Get("workspace"))
	if err != nil {
		writeLedgerError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sum)
}

// MaxResolveReason caps a person's reason for retracting a fact, in
// characters.
const MaxResolveReason = 500

// resolveRequest is POST /v1/admin/ledger/facts/{id}/resolve's body.
type resolveRequest struct {
	Reason string `json:"reason"`
}

// ledgerResolve is POST /v1/admin/ledger/facts/{id}/resolve {"reason"}: a
// person retracts a fact.
func (s *Server) ledgerResolve(w http.ResponseWriter, r *http.Request) {
	id, ok := factID(w, r)
	if !ok {
		return
	}
	var in resolveRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	if problem := CheckResolveReason(in.Reason); problem != "" {
		writeField(w, "reason", problem)
		return
	}
	f, err := s.deps.Negledger.Resolve(r.Context(), id, strings.TrimSpace(in.Reason))
	if err != nil {
		writeLedgerError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"fact": f})
}

// CheckResolveReason says what is wrong with a retraction's reason, or
// "": it is required, and at most MaxResolveReason characters.
func CheckResolveReason(reason string) string {
	switch n := utf8.RuneCountInString(reason); {
	case n == 0 || strings.TrimSpace(reason) == "":
		return "required: say why the fact no longer holds"
	case n > MaxResolveReason:
		return "at most " + strconv.Itoa(MaxResolveReason) + " characters, got " + strconv.Itoa(n)
	}
	return ""
}
