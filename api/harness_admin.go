package api

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
)

// The operator's harness routes (behind the admin token): the same as
// `mull harness`. A session names that session's local store (a person may
// prepare one before its first event); none names the global store.

func (s *Server) routesHarnessAdmin() {
	s.mux.Handle("GET /v1/admin/harness/entries", s.admin(s.withHarness(s.harnessList)))
	s.mux.Handle("GET /v1/admin/harness/entries/{id}", s.admin(s.withHarness(s.harnessShow)))
	s.mux.Handle("POST /v1/admin/harness/entries/{id}/archive", s.admin(s.withHarness(s.harnessArchive)))
	s.mux.Handle("POST /v1/admin/harness/entries/{id}/pin", s.admin(s.withHarness(s.harnessPin)))
	s.mux.Handle("GET /v1/admin/harness/refinements", s.admin(s.withHarness(s.harnessHistory)))
	s.mux.Handle("GET /v1/admin/harness/refinements/{id}", s.admin(s.withHarness(s.harnessRefinement)))
	s.mux.Handle("POST /v1/admin/harness/refinements/{id}/rollback", s.admin(s.withHarness(s.harnessRollback)))
	s.mux.Handle("GET /v1/admin/harness/reviews", s.admin(s.withHarness(s.harnessReviews)))
	s.mux.Handle("POST /v1/admin/harness/refine", s.admin(s.withHarness(s.harnessAdminRefine)))
	s.mux.Handle("POST /v1/admin/harness/apply", s.admin(s.withHarness(s.harnessApply)))
}

// ParseHarnessKind reads a kind filter: "" (any) or one of harness.Kinds.
func ParseHarnessKind(v string) (harness.Kind, string) {
	k := harness.Kind(v)
	if k != "" && !slices.Contains(harness.Kinds, k) {
		return "", "want one of prompt, memory, skill, subagent, got " + strconv.Quote(v)
	}
	return k, ""
}

// queryKind reads ?kind=, answering 400 itself.
func queryKind(w http.ResponseWriter, v string) (harness.Kind, bool) {
	k, problem := ParseHarnessKind(v)
	if problem != "" {
		writeField(w, "kind", problem)
	}
	return k, problem == ""
}

// queryFlag reads a boolean parameter ("1", "true", "0", "false"; absent
// is false), answering 400 itself.
func queryFlag(w http.ResponseWriter, r *http.Request, name string) (bool, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, true
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		writeField(w, name, "want 1 or 0 (true or false), got "+strconv.Quote(v))
		return false, false
	}
	return b, true
}

// harnessLimit reads ?limit= (1 to 1000, default 100), answering 400 itself.
func harnessLimit(w http.ResponseWriter, r *http.Request) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 100, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		writeField(w, "limit", "must be a whole number between 1 and 1000")
		return 0, false
	}
	return n, true
}

// harnessList is GET /v1/admin/harness/entries?session=&kind=&archived=1.
func (s *Server) harnessList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind, ok := queryKind(w, q.Get("kind"))
	if !ok {
		return
	}
	archived, ok := queryFlag(w, r, "archived")
	if !ok {
		return
	}
	list, err := s.deps.Harness.List(r.Context(), harnesses.ListFilter{Session: q.Get("session"), Kind: kind, Archived: archived})
	if err != nil {
		writeHarnessError(w, err)
		return
	}
	if list == nil {
		list = []harnesses.EntryView{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": list})
}

// entryRef reads an entry's {id}, ?session= and ?kind=.
func entryRef(w http.ResponseWriter, r *http.Request, session, kind string) (harnesses.EntryRef, bool) {
	k, ok := queryKind(w, kind)
	if !ok {
		return harnesses.EntryRef{}, false
	}
	return harnesses.EntryRef{Scope: harness.Local(session), Kind: k, ID: r.PathValue("id")}, true
}

// harnessShow is GET /v1/admin/harness/entries/{id}?session=&kind=&at=&versions=1:
// the entry now or as it was at at (RFC 3339), with every version.
func (s *Server) harnessShow(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ref, ok := entryRef(w, r, q.Get("session"), q.Get("kind"))
	if !ok {
		return
	}
	var at time.Time
	if v := q.Get("at"); v != "" {
		var err error
		if at, err = time.Parse(time.RFC3339Nano, v); err != nil {
			writeField(w, "at", "want an RFC 3339 time (2026-12-01T10:00:00Z), got "+strconv.Quote(v))
			return
		}
	}
	versions, ok := queryFlag(w, r, "versions")
	if !ok {
		return
	}
	e, err := s.deps.Harness.Get(r.Context(), ref, at)
	if err != nil {
		writeHarnessError(w, err)
		return
	}
	out := map[string]any{"entry": e}
	if versions {
		ref.Kind = e.Kind
		vs, err := s.deps.Harness.Versions(r.Context(), ref)
		if err != nil {
			writeHarnessError(w, err)
			return
		}
		out["versions"] = vs
	}
	writeJSON(w, http.StatusOK, out)
}

// lifecycleRequest is the body of archive and pin.
type lifecycleRequest struct {
	Session string `json:"session"`
	Kind    string `json:"kind"`
	Reason  string `json:"reason"`
	// Restore (archive) restores an archived entry.
	Restore bool `json:"restore"`
	// Pin (pin, required) pins or unpins.
	Pin *bool `json:"pin"`
}

// MaxLifecycleReason caps an archive's or pin's reason, in characters.
const MaxLifecycleReason = 500

// harnessArchive is POST /v1/admin/harness/entries/{id}/archive
// {session?, kind?, reason?, restore?}.
func (s *Server) harnessArchive(w http.ResponseWriter, r *http.Request) {
	in, ref, ok := s.lifecycleInput(w, r)
	if !ok {
		return
	}
	archive := !in.Restore
	out, err := s.deps.Harness.SetLifecycle(r.Context(), ref, &archive, nil, strings.TrimSpace(in.Reason), harnesses.ByAdmin)
	s.writeApplied(w, out, err)
}

// harnessPin is POST /v1/admin/harness/entries/{id}/pin {session?, kind?,
// reason?, pin}.
func (s *Server) harnessPin(w http.ResponseWriter, r *http.Request) {
	in, ref, ok := s.lifecycleInput(w, r)
	if !ok {
		return
	}
	if in.Pin == nil {
		writeField(w, "pin", "required: true pins the entry, false unpins it")
		return
	}
	out, err := s.deps.Harness.SetLifecycle(r.Context(), ref, nil, in.Pin, strings.TrimSpace(in.Reason), harnesses.ByAdmin)
	s.writeApplied(w, out, err)
}

func (s *Server) lifecycleInput(w http.ResponseWriter, r *http.Request) (lifecycleRequest, harnesses.EntryRef, bool) {
	var in lifecycleRequest
	if r.ContentLength != 0 && !decodeLedger(w, r, &in) {
		return in, harnesses.EntryRef{}, false
	}
	if n := len([]rune(in.Reason)); n > MaxLifecycleReason {
		writeField(w, "reason", "at most "+strconv.Itoa(MaxLifecycleReason)+" characters, got "+strconv.Itoa(n))
		return in, harnesses.EntryRef{}, false
	}
	ref, ok := entryRef(w, r, in.Session, in.Kind)
	return in, ref, ok
}

// harnessHistory is GET /v1/admin/harness/refinements?session=&scope=&limit=.
func (s *Server) harnessHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	scope := q.Get("scope")
	if scope != "" && scope != "global" && scope != "local" {
		writeField(w, "scope", `want "global" or "local", got `+strconv.Quote(scope))
		return
	}
	limit, ok := harnessLimit(w, r)
	if !ok {
		return
	}
	list, err := s.deps.Harness.History(r.Context(), harnesses.HistoryFilter{Session: q.Get("session"), Scope: scope, Limit: limit})
	if err != nil {
		writeHarnessError(w, err)
		return
	}
	if list == nil {
		list = []harnesses.RefinementView{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"refinements": list})
}

// harnessRefinement is GET /v1/admin/harness/refinements/{id}.
func (s *Server) harnessRefinement(w http.ResponseWriter, r *http.Request) {
	ref, err := s.deps.Harness.Refinement(r.Context(), r.PathValue("id"))
	if err != nil {
		writeHarnessError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"refinement": ref})
}

// harnessRollback is POST /v1/admin/harness/refinements/{id}/rollback.
func (s *Server) harnessRollback(w http.ResponseWriter, r *http.Request) {
	out, err := s.deps.Harness.Rollback(r.Context(), r.PathValue("id"), harnesses.ByAdmin)
	s.writeApplied(w, out, err)
}

// harnessReviews is GET /v1/admin/harness/reviews?session=&limit=.
func (s *Server) harnessReviews(w http.ResponseWriter, r *http.Request) {
	limit, ok := harnessLimit(w, r)
	if !ok {
		return
	}
	list, err := s.deps.Harness.Reviews(r.Context(), harnesses.ReviewFilter{Session: r.URL.Query().Get("session"), Limit: limit})
	if err != nil {
		writeHarnessError(w, err)
		return
	}
	if list == nil {
		list = []harnesses.ReviewRow{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"reviews": list})
}

// adminRefineRequest is POST /v1/admin/harness/refine's body.
type adminRefineRequest struct {
	Session     string `json:"session"`
	Global      bool   `json:"global"`
	Instruction string `json:"instruction"`
}

// harnessAdminRefine is POST /v1/admin/harness/refine {session?, global?,
// instruction?}: a manual refine_review, 202 {job_id}. The session (its
// trajectory, and its local store unless global) must be known; a global
// refine may go without one (the planner reads no trajectory then).
func (s *Server) harnessAdminRefine(w http.ResponseWriter, r *http.Request) {
	var in adminRefineRequest
	if !decodeLedger(w, r, &in) {
		return
	}
	if p := CheckInstruction(in.Instruction); p != "" {
		writeField(w, "instruction", p)
		return
	}
	if in.Session == "" && in.Global {
		s.enqueueRefine(w, r, "", "", true, in.Instruction, harnesses.ByAdmin)
		return
	}
	if in.Session == "" {
		writeField(w, "session", "required unless global: the session whose store and trajectory to refine")
		return
	}
	sess, ok := s.knownSession(w, r, in.Session)
	if !ok {
		return
	}
	s.enqueueRefine(w, r, sess.ID, sess.Workspace, in.Global, in.Instruction, harnesses.ByAdmin)
}

// ApplyBody is POST /v1/admin/harness/apply's body (and `mull harness
// apply`'s file): a proposal applied by hand under every rule (the seed's
// rule cases go through it).
type ApplyBody struct {
	// Session names that session's local store; "" the global one.
	Session  string           `json:"session,omitempty"`
	Proposal harness.Proposal `json:"proposal"`
	// Baseline is the "kind/id" → version the proposal was planned
	// against (0: absent); a listed entry at another version fails rule 6.
	Baseline map[string]int `json:"baseline,omitempty"`
	// Automatic applies it as the review job would (protected entries
	// and kinds are immutable).
	Automatic bool `json:"automatic,omitempty"`
}

// MaxApplyEdits caps one proposal's edits.
const MaxApplyEdits = 100

// Check names the first bad field of an apply, or "": the rules
// themselves are the service's (a bad edit is a rejected edit, recorded).
func (b ApplyBody) Check() (field, problem string) {
	switch n := len(b.Proposal.Edits); {
	case n == 0:
		return "proposal.edits", "required: at least one edit"
	case n > MaxApplyEdits:
		return "proposal.edits", "at most " + strconv.Itoa(MaxApplyEdits) + " edits, got " + strconv.Itoa(n)
	}
	for key, v := range b.Baseline {
		kind, id, ok := strings.Cut(key, "/")
		if _, p := ParseHarnessKind(kind); !ok || kind == "" || id == "" || p != "" {
			return "baseline", `keys are "kind/id" (kind prompt, memory, skill or subagent), got ` + strconv.Quote(key)
		}
		if v < 0 {
			return "baseline", "versions are 0 (absent) or more, got " + strconv.Itoa(v) + " for " + key
		}
	}
	return "", ""
}

// Request is the service's request for the apply, made by src.
func (b ApplyBody) Request(src harnesses.Source) harnesses.ApplyRequest {
	return harnesses.ApplyRequest{Proposal: b.Proposal, Scope: harness.Local(b.Session), BaselineVersions: b.Baseline,
		Automatic: b.Automatic, Source: src, SessionID: b.Session}
}

// harnessApply is POST /v1/admin/harness/apply: 200 {refinement} (its
// rejected edits carry the rule's message), or 202 {pending_proposal}.
func (s *Server) harnessApply(w http.ResponseWriter, r *http.Request) {
	var in ApplyBody
	if !decodeLedger(w, r, &in) {
		return
	}
	if field, problem := in.Check(); field != "" {
		writeField(w, field, problem)
		return
	}
	out, err := s.deps.Harness.Apply(r.Context(), in.Request(harnesses.ByAdmin))
	s.writeApplied(w, out, err)
}
