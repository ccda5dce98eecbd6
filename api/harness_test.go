package api_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/jobs/refinereview"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// harnessRig is a server with harness refinement over s, the API token
// "tok" (admin routes: loopback), and a River client that knows every job
// kind but works none: an enqueued refine_review stays for the test.
type harnessRig struct {
	t   *testing.T
	s   *store.Store
	srv *api.Server
	svc *harnesses.Service
	c   *engine.Client
}

func newHarnessRig(t *testing.T, s *store.Store, edit ...func(*config.Config)) *harnessRig {
	t.Helper()
	cfg := enginetest.Config()
	cfg.APIToken = "tok"
	for _, e := range edit {
		e(&cfg)
	}
	reg := engine.NewRegistry(nil)
	registerRefine(reg, s, cfg)
	c := enginetest.NewClient(t, s, reg, cfg, false)
	svc := harnesses.New(s, cfg.Harness, enginetest.Logger())
	srv, err := api.New(t.Context(), api.Deps{Store: s, Client: c, Registry: reg, Logger: enginetest.Logger(),
		Config: cfg, Harness: svc})
	if err != nil {
		t.Fatal(err)
	}
	return &harnessRig{t: t, s: s, srv: srv, svc: svc, c: c}
}

// known makes session a session mull has events from, in workspace.
func (h *harnessRig) known(session, workspace string) {
	h.t.Helper()
	ctx := context.Background()
	if err := h.s.InTx(ctx, func(tx *sql.Tx) error {
		_, _, err := h.s.LockSession(ctx, tx, session, workspace, time.Now().UTC())
		return err
	}); err != nil {
		h.t.Fatal(err)
	}
}

// The harness routes refuse what is not theirs before the service runs:
// no token, a missing or unknown session (404), an unknown or mistyped
// field, a bad kind, scope, limit, time, flag, mode or baseline (400
// naming the field); without a harness they answer 503.
func TestHarnessRoutesRefuseBadInput(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarnessRig(t, s)
		h.known("s1", "/w")
		tok := bearer("tok")
		expect(t, serve(h.srv, "GET", "/v1/harness/projection?session=s1", ""), http.StatusUnauthorized, nil)
		expect(t, serve(h.srv, "POST", "/v1/harness/refine", `{"session":"s1","mode":"plan"}`), http.StatusUnauthorized, nil)
		for _, tc := range []struct{ method, target, body, field string }{
			{"GET", "/v1/harness/projection", "", "session"},
			{"GET", "/v1/harness/skills", "", "session"},
			{"GET", "/v1/harness/wrapup", "", "session"},
			{"POST", "/v1/harness/injections", `{"keys":["global:memory:x"]}`, "session"},
			{"POST", "/v1/harness/injections", `{"session":"s1","keys":"x"}`, "keys"},
			{"POST", "/v1/harness/injections", `{"session":"s1","keys":[` + strings.Repeat(`"k",`, api.MaxInjectionKeys) + `"k"]}`, "keys"},
			{"POST", "/v1/harness/refine", `{"session":"s1"}`, "mode"},
			{"POST", "/v1/harness/refine", `{"session":"s1","mode":"delete"}`, "mode"},
			{"POST", "/v1/harness/refine", `{"session":"s1","mode":"plan","bogus":true}`, "bogus"},
			{"POST", "/v1/harness/refine", `{"session":"s1","mode":"plan","global":"yes"}`, "global"},
			{"POST", "/v1/harness/refine", `{"session":"s1","mode":"plan","instruction":"` + strings.Repeat("x", api.MaxInstruction+1) + `"}`, "instruction"},
			{"POST", "/v1/harness/refine", `{"mode":"plan"}`, "session"},
			{"POST", "/v1/harness/refine", `{"session":"s1","mode":"rollback","rollback_id":"refine_1"}`, "scope"},
			{"POST", "/v1/harness/refine", `{"session":"s1","mode":"rollback","rollback_id":"refine_1","scope":"all"}`, "scope"},
			{"POST", "/v1/harness/refine", `{"session":"s1","mode":"rollback","scope":"local"}`, "rollback_id"},
			{"GET", "/v1/harness/refine/x1", "", "job_id"},
			{"GET", "/v1/harness/refine/0", "", "job_id"},
			{"GET", "/v1/harness/refine/1", "", "session"},
			{"POST", "/v1/harness/promote", `{"session":"s1"}`, "id"},
			{"POST", "/v1/harness/promote", `{"id":"x"}`, "session"},
		} {
			var fb fieldBody
			expect(t, serve(h.srv, tc.method, tc.target, tc.body, tok), http.StatusBadRequest, &fb)
			if fb.Field != tc.field || !strings.HasPrefix(fb.Error, tc.field+": ") {
				t.Errorf("%s %s %s: field %q (%s), want %q", tc.method, tc.target, tc.body, fb.Field, fb.Error, tc.field)
			}
		}
		for _, tc := range []struct{ method, target, body string }{
			{"GET", "/v1/harness/projection?session=nobody", ""},
			{"GET", "/v1/harness/skills?session=nobody", ""},
			{"GET", "/v1/harness/wrapup?session=nobody", ""},
			{"POST", "/v1/harness/injections", `{"session":"nobody","keys":[]}`},
			{"POST", "/v1/harness/refine", `{"session":"nobody","mode":"plan"}`},
			{"POST", "/v1/harness/promote", `{"session":"nobody","id":"x"}`},
			{"GET", "/v1/harness/refine/1?session=nobody", ""},
		} {
			expectError(t, serve(h.srv, tc.method, tc.target, tc.body, tok), http.StatusNotFound, `no session "nobody"`)
		}
		for _, tc := range []struct{ method, target, body, field string }{
			{"GET", "/v1/admin/harness/entries?kind=memories", "", "kind"},
			{"GET", "/v1/admin/harness/entries?archived=maybe", "", "archived"},
			{"GET", "/v1/admin/harness/entries/x?at=yesterday", "", "at"},
			{"GET", "/v1/admin/harness/entries/x?versions=all", "", "versions"},
			{"GET", "/v1/admin/harness/entries/x?kind=tool", "", "kind"},
			{"GET", "/v1/admin/harness/refinements?scope=both", "", "scope"},
			{"GET", "/v1/admin/harness/refinements?limit=0", "", "limit"},
			{"GET", "/v1/admin/harness/reviews?limit=1001", "", "limit"},
			{"POST", "/v1/admin/harness/entries/x/pin", `{}`, "pin"},
			{"POST", "/v1/admin/harness/entries/x/pin", `{"pin":"yes"}`, "pin"},
			{"POST", "/v1/admin/harness/entries/x/archive", `{"kind":"tool"}`, "kind"},
			{"POST", "/v1/admin/harness/entries/x/archive", `{"reason":"` + strings.Repeat("x", api.MaxLifecycleReason+1) + `"}`, "reason"},
			{"POST", "/v1/admin/harness/refine", `{}`, "session"},
			{"POST", "/v1/admin/harness/refine", `{"global":true,"instruction":"` + strings.Repeat("x", api.MaxInstruction+1) + `"}`, "instruction"},
			{"POST", "/v1/admin/harness/apply", `{"proposal":{"summary":"s","edits":[]}}`, "proposal.edits"},
			{"POST", "/v1/admin/harness/apply", `{"proposal":{"edits":[{"action":"create"}]},"baseline":{"memory":1}}`, "baseline"},
			{"POST", "/v1/admin/harness/apply", `{"proposal":{"edits":[{"action":"create"}]},"baseline":{"tool/x":1}}`, "baseline"},
			{"POST", "/v1/admin/harness/apply", `{"proposal":{"edits":[{"action":"create"}]},"baseline":{"memory/x":-1}}`, "baseline"},
			{"POST", "/v1/admin/harness/apply", `{"proposal":{"edits":[{"action":"create","blastRadius":"general"}]}}`, "blastRadius"},
		} {
			var fb fieldBody
			expect(t, serve(h.srv, tc.method, tc.target, tc.body), http.StatusBadRequest, &fb)
			if fb.Field != tc.field {
				t.Errorf("%s %s %s: field %q (%s), want %q", tc.method, tc.target, tc.body, fb.Field, fb.Error, tc.field)
			}
		}
		expectError(t, serve(h.srv, "POST", "/v1/admin/harness/refine", `{"session":"nobody"}`), http.StatusNotFound, `no session "nobody"`)

		bare, err := api.New(t.Context(), api.Deps{Store: s, Client: h.c, Registry: engine.NewRegistry(nil),
			Logger: enginetest.Logger(), Config: enginetest.Config()})
		if err != nil {
			t.Fatal(err)
		}
		expectError(t, serve(bare, "GET", "/v1/harness/projection?session=s1", ""), http.StatusServiceUnavailable, "not configured")
		expectError(t, serve(bare, "GET", "/v1/admin/harness/entries", ""), http.StatusServiceUnavailable, "not configured")
	})
}

// refinementBody is {refinement}.
type refinementBody struct {
	Refinement harness.Refinement `json:"refinement"`
}

// apply posts an admin apply and decodes the refinement.
func (h *harnessRig) apply(body string) harness.Refinement {
	h.t.Helper()
	var out refinementBody
	expect(h.t, serve(h.srv, "POST", "/v1/admin/harness/apply", body), http.StatusOK, &out)
	return out.Refinement
}

// jobApply applies proposal (JSON) to scope as the refine_review job
// would (source job), which an agent may roll back.
func (h *harnessRig) jobApply(scope harness.Scope, proposal string) harness.Refinement {
	h.t.Helper()
	var p harness.Proposal
	if err := json.Unmarshal([]byte(proposal), &p); err != nil {
		h.t.Fatal(err)
	}
	out, err := h.svc.Apply(h.t.Context(), harnesses.ApplyRequest{Proposal: p, Scope: scope, Source: harnesses.ByJob, SessionID: scope.Session})
	if err != nil || out.Refinement.ID == "" {
		h.t.Fatalf("job apply: %+v, %v", out, err)
	}
	return out.Refinement
}

// edits says each edit's "applied" or its error.
func edits(r harness.Refinement) []string {
	var out []string
	for _, e := range r.Edits {
		if e.Applied {
			out = append(out, "applied")
		} else {
			out = append(out, e.Error)
		}
	}
	return out
}

// The admin routes over one entry's life: a manual apply creates it (v1),
// an update at the growth cap applies and one a character over is
// rejected with the seed's message, a stale baseline fails rule 6, the
// entry is listed, shown now and at a time before it changed, with every
// version; archive and pin bump its version; the history lists the
// refinements, one is shown, rolled back (200) and not twice (409); an
// unknown entry or refinement is 404.
func TestHarnessAdminRoutes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarnessRig(t, s)
		created := h.apply(`{"proposal":{"summary":"note the build","edits":[{"action":"create","kind":"memory","id":"build","content":"0123456789","title":"Build"}]}}`)
		if got := edits(created); len(got) != 1 || got[0] != "applied" || created.ID == "" || !created.Scope.IsGlobal() {
			t.Fatalf("create: %+v", created)
		}
		beforeUpdate := time.Now().UTC()
		// 10 → 15 characters is growth 0.5, exactly at the cap; 15 → 23 is over it.
		up := h.apply(`{"proposal":{"summary":"grow","edits":[{"action":"update","kind":"memory","id":"build","content":"012345678901234","reason":"more"}]}}`)
		over := h.apply(`{"proposal":{"summary":"grow more","edits":[{"action":"update","kind":"memory","id":"build","content":"01234567890123456789012","reason":"more"}]}}`)
		if edits(up)[0] != "applied" || edits(over)[0] != harness.MsgGrowth {
			t.Fatalf("growth: at the cap %v, over it %v", edits(up), edits(over))
		}
		stale := h.apply(`{"proposal":{"summary":"stale","edits":[{"action":"update","kind":"memory","id":"build","content":"012345678901234!","reason":"r"}]},"baseline":{"memory/build":1}}`)
		if edits(stale)[0] != harness.MsgChanged {
			t.Fatalf("stale baseline: %v", edits(stale))
		}

		var list struct {
			Entries []harnesses.EntryView `json:"entries"`
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/harness/entries?kind=memory", ""), http.StatusOK, &list)
		if len(list.Entries) != 1 || list.Entries[0].ID != "build" || list.Entries[0].Version != 2 {
			t.Fatalf("list: %+v", list)
		}
		var shown struct {
			Entry    harnesses.EntryView `json:"entry"`
			Versions []harnesses.Version `json:"versions"`
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/harness/entries/build?versions=1", ""), http.StatusOK, &shown)
		if shown.Entry.Content != "012345678901234" || len(shown.Versions) != 2 || shown.Versions[0].Content != "0123456789" {
			t.Fatalf("show: %+v", shown)
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/harness/entries/build?at="+beforeUpdate.Format(time.RFC3339Nano), ""), http.StatusOK, &shown)
		if shown.Entry.Version != 1 || shown.Entry.Content != "0123456789" {
			t.Fatalf("show at %s: %+v", beforeUpdate, shown.Entry)
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/harness/entries/build?at=2000-01-01T00:00:00Z", ""), http.StatusNotFound, nil)
		expect(t, serve(h.srv, "GET", "/v1/admin/harness/entries/nothing", ""), http.StatusNotFound, nil)

		var arch, pin refinementBody
		expect(t, serve(h.srv, "POST", "/v1/admin/harness/entries/build/archive", `{"reason":"old"}`), http.StatusOK, &arch)
		expect(t, serve(h.srv, "POST", "/v1/admin/harness/entries/build/pin", `{"pin":true,"kind":"memory"}`), http.StatusOK, &pin)
		expect(t, serve(h.srv, "GET", "/v1/admin/harness/entries?archived=1", ""), http.StatusOK, &list)
		if edits(arch.Refinement)[0] != "applied" || edits(pin.Refinement)[0] != "applied" || len(list.Entries) != 1 ||
			list.Entries[0].Version != 4 || !list.Entries[0].Archived() || !list.Entries[0].Metadata.Pinned {
			t.Fatalf("archive %v, pin %v, then %+v", edits(arch.Refinement), edits(pin.Refinement), list.Entries)
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/harness/entries", ""), http.StatusOK, &list)
		if len(list.Entries) != 0 {
			t.Fatalf("an archived entry is listed without archived=1: %+v", list.Entries)
		}

		var hist struct {
			Refinements []harnesses.RefinementView `json:"refinements"`
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/harness/refinements?scope=global&limit=10", ""), http.StatusOK, &hist)
		if len(hist.Refinements) != 6 || hist.Refinements[0].ID != pin.Refinement.ID || hist.Refinements[0].Source != harnesses.ByAdmin {
			t.Fatalf("history: %+v", hist.Refinements)
		}
		var one struct {
			Refinement harnesses.RefinementView `json:"refinement"`
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/harness/refinements/"+created.ID, ""), http.StatusOK, &one)
		if one.Refinement.ID != created.ID || len(one.Refinement.Edits) != 1 {
			t.Fatalf("refinement: %+v", one)
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/harness/refinements/refine_nothing", ""), http.StatusNotFound, nil)
		var rb refinementBody
		expect(t, serve(h.srv, "POST", "/v1/admin/harness/refinements/"+pin.Refinement.ID+"/rollback", ""), http.StatusOK, &rb)
		if rb.Refinement.ID != "rollback_"+pin.Refinement.ID || rb.Refinement.RollbackOf != pin.Refinement.ID || edits(rb.Refinement)[0] != "applied" {
			t.Fatalf("rollback: %+v", rb.Refinement)
		}
		expect(t, serve(h.srv, "POST", "/v1/admin/harness/refinements/"+pin.Refinement.ID+"/rollback", ""), http.StatusConflict, nil)
		expect(t, serve(h.srv, "POST", "/v1/admin/harness/refinements/refine_nothing/rollback", ""), http.StatusNotFound, nil)
		expect(t, serve(h.srv, "POST", "/v1/admin/harness/entries/nothing/archive", ""), http.StatusNotFound, nil)
		expect(t, serve(h.srv, "POST", "/v1/admin/harness/entries/nothing/pin", `{"pin":false}`), http.StatusNotFound, nil)
	})
}

type projectionBody struct {
	Text  string   `json:"text"`
	ETag  string   `json:"etag"`
	Keys  []string `json:"keys"`
	Count int      `json:"count"`
	Query string   `json:"query"`
}

type skillsBody struct {
	ETag   string            `json:"etag"`
	Skills []harnesses.Skill `json:"skills"`
}

// The agent's routes over a session's merged harness: the projection and
// the skills answer with an ETag (304 when If-None-Match names it, quoted
// or not) that changes when an entry does; injections count a key (204);
// the wrap-up suggests; promote copies a local entry to the global store
// and a second promote of the id is 409 "global id conflict"; a rollback
// names its scope, and one of another scope is not found.
func TestHarnessAgentRoutes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarnessRig(t, s)
		h.known("s1", "/w")
		tok := bearer("tok")
		h.apply(`{"proposal":{"summary":"g","edits":[{"action":"create","kind":"memory","id":"house-style","content":"tabs, not spaces","title":"Style"}]}}`)
		local := h.apply(`{"session":"s1","proposal":{"summary":"l","edits":[{"action":"create","kind":"skill","id":"retry-flaky","content":"rerun the failed test once","description":"rerun flaky tests"}]}}`)

		var p projectionBody
		expect(t, serve(h.srv, "GET", "/v1/harness/projection?session=s1&query=style", "", tok), http.StatusOK, &p)
		rec := serve(h.srv, "GET", "/v1/harness/projection?session=s1&query=style", "", tok)
		if p.ETag == "" || !strings.HasPrefix(p.ETag, `"`) || rec.Header().Get("ETag") != p.ETag || p.Count != len(p.Keys) || p.Count != 2 ||
			!strings.Contains(p.Text, "tabs, not spaces") || p.Query != "style" {
			t.Fatalf("projection: %s %+v", rec.Header().Get("ETag"), p)
		}
		for _, tag := range []string{p.ETag, strings.Trim(p.ETag, `"`), `W/` + p.ETag} {
			if rec := serve(h.srv, "GET", "/v1/harness/projection?session=s1&query=style", "", tok, header("If-None-Match", tag)); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
				t.Fatalf("If-None-Match %s: %d %s", tag, rec.Code, rec.Body)
			}
		}
		expect(t, serve(h.srv, "POST", "/v1/harness/injections", `{"session":"s1","keys":["`+strings.Join(p.Keys, `","`)+`","global:memory:nothing"]}`, tok), http.StatusNoContent, nil)

		// A session-local skill is not served as a bundle: DSH's skills dir
		// is shared by every session on the machine.
		var sk0 skillsBody
		expect(t, serve(h.srv, "GET", "/v1/harness/skills?session=s1", "", tok), http.StatusOK, &sk0)
		if len(sk0.Skills) != 0 {
			t.Fatalf("a local skill is served: %+v", sk0)
		}
		h.apply(`{"proposal":{"summary":"g","edits":[{"action":"create","kind":"skill","id":"flaky-tests","content":"rerun the failed test once","description":"rerun flaky tests"}]}}`)
		var sk skillsBody
		expect(t, serve(h.srv, "GET", "/v1/harness/skills?session=s1", "", tok), http.StatusOK, &sk)
		if len(sk.Skills) != 1 || sk.Skills[0].Name != "mull-flaky-tests" || sk.Skills[0].Version != 1 || !strings.Contains(sk.Skills[0].Markdown, "rerun the failed test once") {
			t.Fatalf("skills: %+v", sk)
		}
		expect(t, serve(h.srv, "GET", "/v1/harness/skills?session=s1", "", tok, header("If-None-Match", sk.ETag)), http.StatusNotModified, nil)

		var wr struct {
			Suggestions []harness.Suggestion `json:"suggestions"`
		}
		expect(t, serve(h.srv, "GET", "/v1/harness/wrapup?session=s1", "", tok), http.StatusOK, &wr)
		if len(wr.Suggestions) != 1 || wr.Suggestions[0].ID != "retry-flaky" || wr.Suggestions[0].Fate != harness.Promote {
			t.Fatalf("wrap-up of an injected local entry: %+v", wr.Suggestions)
		}

		var promoted refinementBody
		expect(t, serve(h.srv, "POST", "/v1/harness/promote", `{"session":"s1","id":"retry-flaky"}`, tok), http.StatusOK, &promoted)
		if !promoted.Refinement.Scope.IsGlobal() || edits(promoted.Refinement)[0] != "applied" {
			t.Fatalf("promote: %+v", promoted.Refinement)
		}
		expectError(t, serve(h.srv, "POST", "/v1/harness/promote", `{"session":"s1","id":"retry-flaky"}`, tok), http.StatusConflict, "global id conflict")
		expectError(t, serve(h.srv, "POST", "/v1/harness/promote", `{"session":"s1","id":"nothing"}`, tok), http.StatusNotFound, "local entry not found: nothing")

		// An update of the global skill changes the skills' ETag.
		h.apply(`{"session":"s1","proposal":{"summary":"u","edits":[{"action":"update","kind":"skill","id":"retry-flaky","content":"rerun the failed test twice","reason":"once was not enough"}]}}`)
		h.apply(`{"proposal":{"summary":"u","edits":[{"action":"update","kind":"skill","id":"flaky-tests","content":"rerun the failed test twice","reason":"once was not enough"}]}}`)
		var sk2 skillsBody
		expect(t, serve(h.srv, "GET", "/v1/harness/skills?session=s1", "", tok, header("If-None-Match", sk.ETag)), http.StatusOK, &sk2)
		// (retry-flaky is global too now: promoted above.)
		if sk2.ETag == sk.ETag || len(sk2.Skills) != 2 || sk2.Skills[0].Name != "mull-flaky-tests" || sk2.Skills[0].Version != 2 {
			t.Fatalf("skills after an update: %+v (was %s)", sk2, sk.ETag)
		}

		rollback := func(id, scope string) *httptest.ResponseRecorder {
			return serve(h.srv, "POST", "/v1/harness/refine", `{"session":"s1","mode":"rollback","rollback_id":"`+id+`","scope":"`+scope+`"}`, tok)
		}
		expectError(t, rollback(local.ID, "global"), http.StatusNotFound, "no refinement found with id "+local.ID)
		h.known("s2", "/w")
		expectError(t, serve(h.srv, "POST", "/v1/harness/refine", `{"session":"s2","mode":"rollback","rollback_id":"`+local.ID+`","scope":"local"}`, tok),
			http.StatusNotFound, "no refinement found with id "+local.ID)
		// An agent rolls back what was not a person's: here a job's.
		byJob := h.jobApply(harness.Local("s1"), `{"summary":"j","edits":[{"action":"create","kind":"memory","id":"by-job","content":"c"}]}`)
		var rb refinementBody
		expect(t, rollback(byJob.ID, "local"), http.StatusOK, &rb)
		if rb.Refinement.ID != "rollback_"+byJob.ID || rb.Refinement.Scope != harness.Local("s1") {
			t.Fatalf("agent rollback: %+v", rb.Refinement)
		}
		expect(t, serve(h.srv, "POST", "/v1/admin/harness/entries/house-style/archive", `{}`), http.StatusOK, nil)
		old := p.ETag
		expect(t, serve(h.srv, "GET", "/v1/harness/projection?session=s1&query=style", "", tok, header("If-None-Match", old)), http.StatusOK, &p)
		if p.ETag == old || strings.Contains(p.Text, "tabs, not spaces") {
			t.Fatalf("projection after archiving: %+v (was %s)", p, old)
		}
	})
}

// expectBusy wants the 409 of a refine that would join another job.
func expectBusy(t *testing.T, rec *httptest.ResponseRecorder, msg string, job int64) {
	t.Helper()
	var b struct {
		Error string `json:"error"`
		JobID int64  `json:"job_id"`
	}
	expect(t, rec, http.StatusConflict, &b)
	if b.Error != msg || b.JobID != job {
		t.Fatalf("busy: %+v, want %q and job %d", b, msg, job)
	}
}

type refineBody struct {
	JobID     int64  `json:"job_id"`
	State     string `json:"state"`
	Scope     string `json:"scope"`
	Duplicate bool   `json:"duplicate"`
}

// A plan refine enqueues a manual refine_review of the session's store
// (202), the same request again while it waits (duplicate), the global
// store's apart; a different instruction, or the admin's refine of the
// same store without it, is 409 naming the job (joining would drop the
// instruction), and so is the admin's with the same words (a person's
// refine is not the agent's). The job's status shows
// its state, and once a review row names it, the review and its
// refinement; a job of another kind, or none, is 404.
func TestHarnessRefineRoutes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarnessRig(t, s)
		h.known("s1", "/w")
		tok := bearer("tok")
		var first, again, global refineBody
		expect(t, serve(h.srv, "POST", "/v1/harness/refine", `{"session":"s1","mode":"plan","instruction":"note the build"}`, tok), http.StatusAccepted, &first)
		expect(t, serve(h.srv, "POST", "/v1/harness/refine", `{"session":"s1","mode":"plan","instruction":" note the build "}`, tok), http.StatusAccepted, &again)
		expect(t, serve(h.srv, "POST", "/v1/harness/refine", `{"session":"s1","mode":"plan","global":true}`, tok), http.StatusAccepted, &global)
		if first.JobID == 0 || first.Scope != "local" || first.State != "available" || first.Duplicate ||
			again.JobID != first.JobID || !again.Duplicate || global.JobID == first.JobID || global.Scope != "global" {
			t.Fatalf("refine: first %+v, again %+v, global %+v", first, again, global)
		}
		job, err := h.c.JobGet(t.Context(), first.JobID)
		if err != nil {
			t.Fatal(err)
		}
		var args refinereview.Args
		if err := json.Unmarshal(job.EncodedArgs, &args); err != nil || job.Kind != "refine_review" || args.Session != "s1" ||
			args.Workspace != "/w" || args.Global || args.Trigger != harness.Manual || args.Instruction != "note the build" ||
			args.Source != harnesses.ByAgent {
			t.Fatalf("job %s args %s (%v)", job.Kind, job.EncodedArgs, err)
		}
		busy := fmt.Sprintf("a review of this store is already queued as job %d; try again after it", first.JobID)
		expectBusy(t, serve(h.srv, "POST", "/v1/harness/refine", `{"session":"s1","mode":"plan"}`, tok), busy, first.JobID)
		expectBusy(t, serve(h.srv, "POST", "/v1/admin/harness/refine", `{"session":"s1"}`), busy, first.JobID)
		// The operator's same words are not the same request: a person's
		// refine applies under other rules than the agent's.
		expectBusy(t, serve(h.srv, "POST", "/v1/admin/harness/refine", `{"session":"s1","instruction":"note the build"}`), busy, first.JobID)
		if args.Source != harnesses.ByAgent {
			t.Fatalf("the agent's refine is enqueued as %q", args.Source)
		}

		var st api.RefineStatus
		expect(t, serve(h.srv, "GET", "/v1/harness/refine/"+strconv.FormatInt(first.JobID, 10)+"?session=s1", "", tok), http.StatusOK, &st)
		if st.JobID != first.JobID || st.State != "available" || st.Review != nil || st.Refinement != nil || len(st.Errors) != 0 {
			t.Fatalf("status of a waiting job: %+v", st)
		}
		// What the job's completing transaction records, done here by hand.
		ref := h.apply(`{"session":"s1","proposal":{"summary":"s","edits":[{"action":"create","kind":"memory","id":"m","content":"c"}]}}`)
		if err := s.InTx(t.Context(), func(tx *sql.Tx) error {
			_, err := h.svc.RecordReview(t.Context(), tx, harnesses.ReviewRow{At: time.Now().UTC(), Session: "s1", Workspace: "/w",
				Scope: harness.Local("s1"), Trigger: harness.Manual, Outcome: harness.Approved, Rationale: "asked",
				RefinementID: ref.ID, JobID: first.JobID})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		expect(t, serve(h.srv, "GET", "/v1/harness/refine/"+strconv.FormatInt(first.JobID, 10)+"?session=s1", "", tok), http.StatusOK, &st)
		if st.Review == nil || st.Review.Outcome != harness.Approved || st.Refinement == nil || st.Refinement.ID != ref.ID {
			t.Fatalf("status with a review: %+v", st)
		}
		expectError(t, serve(h.srv, "GET", "/v1/harness/refine/999999?session=s1", "", tok), http.StatusNotFound, "no refine_review job 999999")
		other, err := h.c.Insert(t.Context(), otherArgs{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, serve(h.srv, "GET", "/v1/harness/refine/"+strconv.FormatInt(other.Job.ID, 10)+"?session=s1", "", tok), http.StatusNotFound, nil)
	})
}

// With harness.require_global_approval a global apply waits as a proposal
// (202); POST /v1/admin/proposals/{id}/accept applies it (the entry
// exists), reject only marks another; a second accept is 409.
func TestHarnessProposalRouting(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarnessRig(t, s, func(c *config.Config) { c.Harness.RequireGlobalApproval = true })
		memSrv, err := api.New(t.Context(), api.Deps{Store: s, Client: h.c, Registry: engine.NewRegistry(nil), Logger: enginetest.Logger(),
			Config: enginetest.Config(), Harness: h.svc, Memories: memories.New(s, config.Default().Memory, config.Default().Digest)})
		if err != nil {
			t.Fatal(err)
		}
		var held struct {
			Pending string `json:"pending_proposal"`
		}
		expect(t, serve(memSrv, "POST", "/v1/admin/harness/apply", `{"proposal":{"summary":"g","edits":[{"action":"create","kind":"memory","id":"a","content":"alpha"}]}}`), http.StatusAccepted, &held)
		if held.Pending == "" {
			t.Fatalf("held: %+v", held)
		}
		var list struct {
			Entries []harnesses.EntryView `json:"entries"`
		}
		expect(t, serve(memSrv, "GET", "/v1/admin/harness/entries", ""), http.StatusOK, &list)
		if len(list.Entries) != 0 {
			t.Fatalf("a held refinement applied: %+v", list.Entries)
		}
		var decided struct {
			ID         string             `json:"id"`
			Kind       string             `json:"kind"`
			Status     string             `json:"status"`
			DecidedBy  string             `json:"decided_by"`
			Refinement harness.Refinement `json:"refinement"`
		}
		expect(t, serve(memSrv, "POST", "/v1/admin/proposals/"+held.Pending+"/accept", ""), http.StatusOK, &decided)
		if decided.Status != store.ProposalAccepted || decided.Kind != store.ProposalHarness || edits(decided.Refinement)[0] != "applied" ||
			decided.DecidedBy != store.DecidedByAPI {
			t.Fatalf("accept: %+v", decided)
		}
		if p, _ := s.GetProposal(t.Context(), s.DB, held.Pending); p.DecidedBy != store.DecidedByAPI {
			t.Fatalf("harness proposal decided by %q", p.DecidedBy)
		}
		expect(t, serve(memSrv, "GET", "/v1/admin/harness/entries", ""), http.StatusOK, &list)
		if len(list.Entries) != 1 || list.Entries[0].ID != "a" {
			t.Fatalf("after accept: %+v", list.Entries)
		}
		expect(t, serve(memSrv, "POST", "/v1/admin/proposals/"+held.Pending+"/accept", ""), http.StatusConflict, nil)

		expect(t, serve(memSrv, "POST", "/v1/admin/harness/apply", `{"proposal":{"summary":"g","edits":[{"action":"create","kind":"memory","id":"b","content":"beta"}]}}`), http.StatusAccepted, &held)
		expect(t, serve(memSrv, "POST", "/v1/admin/proposals/"+held.Pending+"/reject", `{"note":"not now"}`), http.StatusOK, &decided)
		expect(t, serve(memSrv, "GET", "/v1/admin/harness/entries", ""), http.StatusOK, &list)
		if decided.Status != store.ProposalRejected || len(list.Entries) != 1 {
			t.Fatalf("reject: %+v, entries %+v", decided, list.Entries)
		}
		// A local apply does not wait.
		expect(t, serve(memSrv, "POST", "/v1/admin/harness/apply", `{"session":"s9","proposal":{"summary":"l","edits":[{"action":"create","kind":"memory","id":"c","content":"gamma"}]}}`), http.StatusOK, nil)
	})
}

// /metrics reports the harness's refinements, edits, reviews and entries,
// read from the database.
func TestHarnessMetrics(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarnessRig(t, s)
		h.apply(`{"proposal":{"summary":"g","edits":[{"action":"create","kind":"memory","id":"a","content":"alpha"},{"action":"update","kind":"memory","id":"zz","content":"x","reason":"r"}]}}`)
		h.apply(`{"session":"s1","proposal":{"summary":"l","edits":[{"action":"create","kind":"prompt","id":"p","content":"be brief"}]}}`)
		if err := s.InTx(t.Context(), func(tx *sql.Tx) error {
			_, err := h.svc.RecordReview(t.Context(), tx, harnesses.ReviewRow{At: time.Now().UTC(), Session: "s1",
				Scope: harness.Local("s1"), Trigger: harness.TurnInterval, Outcome: harness.Declined, Turns: 25})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		rec := serve(h.srv, "GET", "/metrics", "")
		for _, want := range []string{
			`mull_harness_refinements_total{scope="global",source="admin"} 1`,
			`mull_harness_refinements_total{scope="local",source="admin"} 1`,
			`mull_harness_edits_total{result="applied"} 2`,
			`mull_harness_edits_total{result="rejected"} 1`,
			`mull_harness_reviews_total{outcome="declined"} 1`,
			`mull_harness_entries{kind="memory",scope="global"} 1`,
			`mull_harness_entries{kind="prompt",scope="local"} 1`,
		} {
			if !strings.Contains(rec.Body.String(), want+"\n") {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}
