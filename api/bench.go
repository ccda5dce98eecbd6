package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
)

// routesBench mounts A/B benchmark runs (seed 004's benchmark): the
// operator's routes (behind the admin token), the same as `mull bench`;
// the agent's harness_benchmark tool (behind the API token, like
// /v1/harness/refine); and the snapshot the DSH plugin injects in a
// benchmark cell (its benchSnapshot mode), for that cell's capability or
// the admin (cellOrAdmin).
func (s *Server) routesBench() {
	s.mux.Handle("POST /v1/admin/bench/cases", s.admin(s.withBench(s.benchAddCase)))
	s.mux.Handle("POST /v1/admin/bench/cases/import", s.admin(s.withBench(s.benchImport)))
	s.mux.Handle("PATCH /v1/admin/bench/cases/{id}", s.admin(s.withBench(s.benchUpdateCase)))
	s.mux.Handle("POST /v1/admin/bench/cases/{id}/freeze", s.admin(s.withBench(s.benchFreezeCase)))
	s.mux.Handle("POST /v1/admin/bench/freeze", s.admin(s.withBench(s.benchFreezeSet)))
	s.mux.Handle("GET /v1/admin/bench/cases", s.admin(s.withBench(s.benchCases)))
	s.mux.Handle("POST /v1/admin/bench/snapshots", s.admin(s.withBench(s.benchCapture)))
	s.mux.Handle("GET /v1/admin/bench/snapshots", s.admin(s.withBench(s.benchSnapshots)))
	s.mux.Handle("GET /v1/admin/bench/snapshots/{id}", s.admin(s.withBench(s.benchSnapshot)))
	s.mux.Handle("POST /v1/admin/bench/runs", s.admin(s.withBench(s.benchStartRun)))
	s.mux.Handle("POST /v1/admin/bench/memory", s.admin(s.withBench(s.benchStartMemory)))
	s.mux.Handle("GET /v1/admin/bench/runs", s.admin(s.withBench(s.benchRuns)))
	s.mux.Handle("GET /v1/admin/bench/runs/{id}", s.admin(s.withBench(s.benchRun)))
	s.mux.Handle("POST /v1/harness/benchmark", s.apiAuth(s.withBench(s.harnessBenchmark)))
	s.mux.Handle("GET /v1/bench/snapshots/{id}/inject", s.cellOrAdmin(s.withBench(s.benchInject)))
}

func (s *Server) withBench(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.deps.Bench == nil {
			writeError(w, http.StatusServiceUnavailable, "benchmarks are not configured on this server")
			return
		}
		h(w, r)
	}
}

// benchBody is every benchmark error answer: the message, and the seed's
// structured code ("benchmark:<action>:<code>") when there is one, the
// request field a 400 is about, the delta check's reason.
type benchBody struct {
	Error  string `json:"error"`
	Code   string `json:"code,omitempty"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// BenchError maps the service's errors to a status and body: a
// *bench.DeltaError is 409 with code benchmark:run:candidate-delta and its
// reason; a *benches.CodedError its own status and code; a
// *benches.FieldError 400 naming the field; not found 404; a conflict 409;
// anything else 500. action, when not "", is the agent tool's action: the
// errors without a code of their own get the seed's benchmark:<action>:…
// (invalid-argument, not-found, conflict) so the tool's caller always has
// one.
func BenchError(action string, err error) (int, benchBody) {
	var delta *bench.DeltaError
	var coded *benches.CodedError
	var field *benches.FieldError
	code := func(c string) string {
		if action == "" {
			return ""
		}
		return "benchmark:" + action + ":" + c
	}
	switch {
	case errors.As(err, &delta):
		return http.StatusConflict, benchBody{Error: delta.Error(), Code: bench.DeltaCode, Reason: string(delta.Reason)}
	case errors.As(err, &coded):
		status := coded.Status
		if status < 400 || status > 499 {
			status = http.StatusBadRequest
		}
		return status, benchBody{Error: coded.Error(), Code: coded.Code}
	case errors.As(err, &field):
		return http.StatusBadRequest, benchBody{Error: field.Error(), Field: field.Field, Code: code("invalid-argument")}
	case errors.Is(err, benches.ErrNotFound):
		return http.StatusNotFound, benchBody{Error: strings.TrimSuffix(err.Error(), ": "+store.ErrNotFound.Error()), Code: code("not-found")}
	case errors.Is(err, benches.ErrConflict):
		return http.StatusConflict, benchBody{Error: err.Error(), Code: code("conflict")}
	}
	return http.StatusInternalServerError, benchBody{Error: "bench: " + err.Error()}
}

// writeBenchError answers an admin route's error (see BenchError).
func writeBenchError(w http.ResponseWriter, err error) {
	status, body := BenchError("", err)
	writeJSON(w, status, body)
}

// benchConfig is [bench] with its defaults, for the agent route's runs
// argument (the seed's resolveRuns on a JSON number).
func (s *Server) benchConfig() config.Bench {
	return config.Config{Bench: s.deps.Config.Bench}.WithDefaults().Bench
}

// CaseRequest is a case in POST /v1/admin/bench/cases, PATCH …/{id} and
// the import's cases.
type CaseRequest struct {
	ID         string `json:"id"`
	Set        string `json:"set"`
	Title      string `json:"title"`
	Statement  string `json:"statement"`
	Rubric     string `json:"rubric"`
	Capability string `json:"capability"`
}

// Input is the case as the service takes it: ids, set and capability
// trimmed, the texts as given (the service's gate normalizes them).
func (c CaseRequest) Input() benches.CaseInput {
	return benches.CaseInput{ID: strings.TrimSpace(c.ID), Set: strings.TrimSpace(c.Set), Title: c.Title,
		Statement: c.Statement, Rubric: c.Rubric, Capability: strings.TrimSpace(c.Capability)}
}

// Check names the first required field that is empty, prefixed by at
// ("cases[2].") in an import; the service checks the rest (grammar,
// lengths, the trust gate).
func (c CaseRequest) Check(at string) (field, problem string) {
	for _, f := range []struct{ name, v string }{{"id", c.ID}, {"title", c.Title}, {"statement", c.Statement}, {"rubric", c.Rubric}} {
		if strings.TrimSpace(f.v) == "" {
			return at + f.name, "required"
		}
	}
	return "", ""
}

// benchAddCase is POST /v1/admin/bench/cases {id, set?, title, statement,
// rubric, capability?}: 201 {case}, a draft.
func (s *Server) benchAddCase(w http.ResponseWriter, r *http.Request) {
	var in CaseRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	if field, problem := in.Check(""); field != "" {
		writeField(w, field, problem)
		return
	}
	c, err := s.deps.Bench.AddCase(r.Context(), in.Input())
	if err != nil {
		writeBenchError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"case": c})
}

// CaseSet is POST /v1/admin/bench/cases/import's body, and the case-set
// file `mull bench cases add --file` reads (examples/bench-cases.json).
type CaseSet struct {
	Set   string        `json:"set"`
	Cases []CaseRequest `json:"cases"`
}

// MaxImportCases caps one import.
const MaxImportCases = 500

// Check names the first bad field of an import, or "".
func (in CaseSet) Check() (field, problem string) {
	switch n := len(in.Cases); {
	case n == 0:
		return "cases", "required: at least one case"
	case n > MaxImportCases:
		return "cases", fmt.Sprintf("at most %d cases, got %d", MaxImportCases, n)
	}
	seen := map[string]bool{}
	for i, c := range in.Cases {
		at := "cases[" + strconv.Itoa(i) + "]."
		if field, problem := c.Check(at); field != "" {
			return field, problem
		}
		if c.Set != "" && strings.TrimSpace(c.Set) != strings.TrimSpace(in.Set) {
			return at + "set", fmt.Sprintf("the file's set is %q: leave a case's set out or make it the same", in.Set)
		}
		id := strings.TrimSpace(c.ID)
		if seen[id] {
			return at + "id", "duplicate id " + strconv.Quote(id) + " in this import"
		}
		seen[id] = true
	}
	return "", ""
}

// Inputs are the import's cases, each in the import's set.
func (in CaseSet) Inputs() []benches.CaseInput {
	out := make([]benches.CaseInput, len(in.Cases))
	for i, c := range in.Cases {
		c.Set = in.Set
		out[i] = c.Input()
	}
	return out
}

// benchImport is POST /v1/admin/bench/cases/import {set, cases:[…]}: 201
// {added:[ids]}, all or nothing.
func (s *Server) benchImport(w http.ResponseWriter, r *http.Request) {
	var in CaseSet
	if !decodeLedger(w, r, &in) {
		return
	}
	if field, problem := in.Check(); field != "" {
		writeField(w, field, problem)
		return
	}
	added, err := s.deps.Bench.AddCases(r.Context(), in.Inputs())
	if err != nil {
		writeBenchError(w, err)
		return
	}
	ids := make([]string, len(added))
	for i, c := range added {
		ids[i] = c.ID
	}
	writeJSON(w, http.StatusCreated, map[string]any{"added": ids})
}

// benchUpdateCase is PATCH /v1/admin/bench/cases/{id} {title, statement,
// rubric, capability?, set?}: a draft's new texts (the whole case; a
// frozen case is 409 benchmark:update:frozen).
func (s *Server) benchUpdateCase(w http.ResponseWriter, r *http.Request) {
	var in CaseRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	id := r.PathValue("id")
	if in.ID != "" && in.ID != id {
		writeField(w, "id", "a case's id does not change: leave it out or make it "+strconv.Quote(id))
		return
	}
	in.ID = id
	if field, problem := in.Check(""); field != "" {
		writeField(w, field, problem)
		return
	}
	c, err := s.deps.Bench.UpdateCase(r.Context(), in.Input())
	if err != nil {
		writeBenchError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"case": c})
}

// benchFreezeCase is POST /v1/admin/bench/cases/{id}/freeze: 200 {case},
// frozen with its material hash.
func (s *Server) benchFreezeCase(w http.ResponseWriter, r *http.Request) {
	c, err := s.deps.Bench.FreezeCase(r.Context(), r.PathValue("id"))
	if err != nil {
		writeBenchError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"case": c})
}

// freezeSetRequest is POST /v1/admin/bench/freeze's body.
type freezeSetRequest struct {
	Set string `json:"set"`
}

// benchFreezeSet is POST /v1/admin/bench/freeze {set}: freezes every
// draft of the set in one transaction, 200 {frozen:[ids]} (none is fine:
// a set already frozen); a set with no case is 404
// benchmark:freeze:set-not-found.
func (s *Server) benchFreezeSet(w http.ResponseWriter, r *http.Request) {
	var in freezeSetRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	if strings.TrimSpace(in.Set) == "" {
		writeField(w, "set", "required: the set whose drafts to freeze")
		return
	}
	cases, err := s.deps.Bench.FreezeSet(r.Context(), in.Set)
	if err != nil {
		writeBenchError(w, err)
		return
	}
	frozen := make([]string, len(cases))
	for i, c := range cases {
		frozen[i] = c.ID
	}
	writeJSON(w, http.StatusOK, map[string]any{"frozen": frozen})
}

// ParseCaseState reads a state filter: "" (any), draft or frozen.
func ParseCaseState(v string) (bench.CaseState, string) {
	st := bench.CaseState(v)
	if st != "" && st != bench.Draft && st != bench.Frozen {
		return "", "want draft or frozen, got " + strconv.Quote(v)
	}
	return st, ""
}

// benchCases is GET /v1/admin/bench/cases?set=&state=.
func (s *Server) benchCases(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	st, problem := ParseCaseState(q.Get("state"))
	if problem != "" {
		writeField(w, "state", problem)
		return
	}
	list, err := s.deps.Bench.Cases(r.Context(), benches.CaseFilter{Set: q.Get("set"), State: st})
	if err != nil {
		writeBenchError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"cases": nonNil(list)})
}

// captureRequest is POST /v1/admin/bench/snapshots's body.
type captureRequest struct {
	ID      string `json:"id"`
	Session string `json:"session"`
}

// benchCapture is POST /v1/admin/bench/snapshots {id?, session?}: 201
// {snapshot}, the merged harness (the session's view, or the global
// store's) and its refinement history. Capture it before applying the
// refinement a run is to verify.
func (s *Server) benchCapture(w http.ResponseWriter, r *http.Request) {
	var in captureRequest
	if r.ContentLength != 0 && !decodeLedger(w, r, &in) {
		return
	}
	snap, err := s.deps.Bench.Capture(r.Context(), benches.CaptureRequest{ID: strings.TrimSpace(in.ID), Session: in.Session})
	if err != nil {
		writeBenchError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"snapshot": snap})
}

// benchSnapshots is GET /v1/admin/bench/snapshots?limit=, newest first.
func (s *Server) benchSnapshots(w http.ResponseWriter, r *http.Request) {
	limit, ok := harnessLimit(w, r)
	if !ok {
		return
	}
	list, err := s.deps.Bench.Snapshots(r.Context(), limit)
	if err != nil {
		writeBenchError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshots": nonNil(list)})
}

// benchSnapshot is GET /v1/admin/bench/snapshots/{id}.
func (s *Server) benchSnapshot(w http.ResponseWriter, r *http.Request) {
	snap, err := s.deps.Bench.Snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		writeBenchError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshot": snap})
}

// BenchRunKinds and BenchRunStatuses are what GET /v1/admin/bench/runs
// filters on.
var (
	BenchRunKinds    = []string{"refinement", "memory"}
	BenchRunStatuses = []string{"running", "decided", "failed", "cancelled"}
)

// CheckRunFilter says which field of a run filter is bad, or "".
func CheckRunFilter(f benches.RunFilter) (field, problem string) {
	if f.Kind != "" && !slices.Contains(BenchRunKinds, f.Kind) {
		return "kind", "want refinement or memory, got " + strconv.Quote(f.Kind)
	}
	if f.Status != "" && !slices.Contains(BenchRunStatuses, f.Status) {
		return "status", "want running, decided, failed or cancelled, got " + strconv.Quote(f.Status)
	}
	return "", ""
}
