package refinereview_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/jobs/refinereview"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

type obj = map[string]any

// An approved review's plan is applied in the job's completing
// transaction as refine_<job id>, on the automatic path, in the session's
// local store, and the review row records it. The planner call's first
// two messages (system, material) are byte-identical to the review
// call's, so DeepSeek serves them from its prefix cache; each call is
// capped at harness.planner_max_tokens.
func TestApprovedPlanApplies(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 1, func(c *config.Config) { c.Harness.PlannerMaxTokens = 3000 })
		e.open("s1")
		e.fail("s1")
		e.compaction("s1")
		job := e.onlyJob(1)
		if job.State != rivertype.JobStateCompleted {
			t.Fatalf("job %s: %v", job.State, job.Errors)
		}
		id := refinereview.RefinementID(job.ID)
		rs := e.reviews("s1")
		if len(rs) != 1 || rs[0].Outcome != harness.Approved || rs[0].RefinementID != id || len(rs[0].Rejected) != 0 ||
			!strings.Contains(rs[0].Rationale, "failure") {
			t.Fatalf("reviews %+v, want one approved of %s", rs, id)
		}
		ref, err := e.harness.Refinement(context.Background(), id)
		if err != nil || !ref.Automatic || ref.JobID != job.ID || ref.Source != harnesses.ByJob || ref.SessionID != "s1" ||
			ref.Scope != local("s1") || len(ref.Edits) != 1 || !ref.Edits[0].Applied {
			t.Fatalf("refinement %+v, %v", ref, err)
		}
		mem := e.state(local("s1"))[harness.KindMemory]
		if len(mem) != 1 {
			t.Fatalf("local memories %+v, want the plan's one", mem)
		}
		for _, m := range mem {
			if m.Version != 1 || !strings.Contains(m.Content, "FAIL: TestPage2") || m.Metadata.SourceSession != "s1" {
				t.Fatalf("entry %+v", m)
			}
		}
		if g := e.state(harness.Global); len(g) != 0 && len(g[harness.KindMemory]) != 0 {
			t.Fatalf("the global store changed: %+v", g)
		}

		reqs := e.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d calls, want the review and the planner", len(reqs))
		}
		review, plan := reqs[0].Messages, reqs[1].Messages
		if len(review) != 3 || len(plan) != 3 {
			t.Fatalf("messages: review %d, plan %d; want system, material, ask", len(review), len(plan))
		}
		for i := range 2 {
			if review[i].Role != plan[i].Role || review[i].Content != plan[i].Content {
				t.Fatalf("message %d differs between the review and the planner call:\n%q\n%q", i, review[i].Content, plan[i].Content)
			}
		}
		if !strings.Contains(review[1].Content, "FAIL: TestPage2") || !strings.Contains(review[2].Content, reviewAsk) ||
			!strings.Contains(plan[2].Content, planAsk) {
			t.Fatalf("material or asks wrong:\n%s\n%s\n%s", review[1].Content, review[2].Content, plan[2].Content)
		}
		for _, r := range reqs {
			if r.MaxTokens != 3000 || r.ResponseFormat != "json_object" {
				t.Fatalf("call max_tokens %d format %q, want harness.planner_max_tokens 3000 in JSON mode", r.MaxTokens, r.ResponseFormat)
			}
		}
	})
}

// Every verdict is a review row: declined (the review said no), assessed
// (approved, no edit: no refinement), approved with the edits a rule
// rejected, failed when a rule rejected every edit (the refinement is
// still recorded, as the seed does), and failed when a call fails (the
// harness untouched, the error as the rationale, the job dead-lettered
// after its attempts). Each attempt ends the gate: the counter resets.
func TestOutcomes(t *testing.T) {
	approve := answer(reviewAsk, obj{"approved": true, "rationale": "a repeated failure with a fix"})
	create := obj{"action": "create", "kind": "memory", "id": "pager-offset", "content": "The pager's offset is (page-1)*size."}
	missing := obj{"action": "update", "kind": "memory", "id": "no-such-entry", "content": "x", "reason": "it changed"}
	plan := func(edits ...obj) fakeds.Rule {
		if edits == nil {
			edits = []obj{}
		}
		return answer(planAsk, obj{"id": "refine_x", "summary": "remember the pager's offset", "edits": edits})
	}
	for _, tt := range []struct {
		name     string
		rules    []fakeds.Rule
		outcome  harness.Outcome
		state    rivertype.JobState
		entries  int
		rejected int
		refined  bool
		// rationale is part of the row's rationale.
		rationale string
	}{
		{"declined", []fakeds.Rule{answer(reviewAsk, obj{"approved": false, "rationale": "too short"})},
			harness.Declined, rivertype.JobStateCompleted, 0, 0, false, "too short"},
		{"assessed", []fakeds.Rule{approve, plan()}, harness.Assessed, rivertype.JobStateCompleted, 0, 0, false, "a repeated failure"},
		{"approved with a rejected edit", []fakeds.Rule{approve, plan(create, missing)},
			harness.Approved, rivertype.JobStateCompleted, 1, 1, true, "a repeated failure"},
		{"every edit rejected", []fakeds.Rule{approve, plan(missing)}, harness.Failed, rivertype.JobStateCompleted, 0, 1, true, "a repeated failure"},
		{"review breaks the schema", []fakeds.Rule{{Kind: "refine_review", Marker: reviewAsk, Fault: fakeds.FaultWrongSchema}},
			harness.Failed, rivertype.JobStateCancelled, 0, 0, false, "schema"},
		{"planner fails", []fakeds.Rule{approve, {Kind: "refine_review", Marker: planAsk, Fault: fakeds.FaultServerError}},
			harness.Failed, rivertype.JobStateDiscarded, 0, 0, false, "500"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, s *store.Store) {
				e := start(t, s, &fakeds.Script{Rules: tt.rules}, 1, nil)
				e.open("s1")
				e.turns("s1", 25)
				job := e.onlyJob(1)
				if job.State != tt.state {
					t.Fatalf("job %s, want %s (%v)", job.State, tt.state, job.Errors)
				}
				rs := e.reviews("s1")
				if len(rs) != 1 || rs[0].Outcome != tt.outcome || len(rs[0].Rejected) != tt.rejected || rs[0].Turns != 25 ||
					!strings.Contains(rs[0].Rationale, tt.rationale) {
					t.Fatalf("reviews %+v, want one %s with %d rejected and %q", rs, tt.outcome, tt.rejected, tt.rationale)
				}
				for _, r := range rs[0].Rejected {
					if r.ID != "no-such-entry" || r.Action != harness.Update || r.Error == "" {
						t.Fatalf("rejected %+v", r)
					}
				}
				id := refinereview.RefinementID(job.ID)
				_, err := e.harness.Refinement(context.Background(), id)
				if refined := err == nil; refined != tt.refined || (refined && rs[0].RefinementID != id) || (!refined && !errors.Is(err, harnesses.ErrNotFound)) {
					t.Fatalf("refinement %s: %v (row names %q); want recorded %t", id, err, rs[0].RefinementID, tt.refined)
				}
				if n := len(e.state(local("s1"))[harness.KindMemory]); n != tt.entries {
					t.Fatalf("%d local entries, want %d", n, tt.entries)
				}
				if g := e.gate("s1"); g.Turns != 0 || g.Enqueued || g.Pending {
					t.Fatalf("gate after the attempt %+v", g)
				}
			})
		})
	}
}

// A failed attempt never touches the harness: an error after the apply,
// before the commit, rolls the apply back with the job's completion, and
// the attempt records a failed row; the retry plans again and applies
// once, as refine_<job id>.
func TestFailedAttemptTouchesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 2, nil)
		var failed int
		store.SetFailpointError(func(name string) error {
			if name == refinereview.FailpointApplied && failed == 0 {
				failed++
				return errors.New("disk full")
			}
			return nil
		})
		t.Cleanup(func() { store.SetFailpointError(nil) })
		e.open("s1")
		e.fail("s1")
		e.compaction("s1")
		job := e.onlyJob(1)
		if job.State != rivertype.JobStateCompleted || job.Attempt != 2 {
			t.Fatalf("job %s after %d attempts: %v", job.State, job.Attempt, job.Errors)
		}
		rs := e.reviews("s1") // newest first
		if len(rs) != 2 || rs[1].Outcome != harness.Failed || !strings.Contains(rs[1].Rationale, "disk full") || rs[1].RefinementID != "" ||
			rs[0].Outcome != harness.Approved || rs[0].RefinementID != refinereview.RefinementID(job.ID) {
			t.Fatalf("reviews %+v: want the failed attempt, then the applied one", rs)
		}
		mem := e.state(local("s1"))[harness.KindMemory]
		if len(mem) != 1 {
			t.Fatalf("entries %+v, want the one applied once", mem)
		}
		for _, m := range mem {
			if m.Version != 1 {
				t.Fatalf("entry %+v applied twice", m)
			}
		}
		hist, err := e.harness.History(context.Background(), harnesses.HistoryFilter{Session: "s1"})
		if err != nil || len(hist) != 1 {
			t.Fatalf("history %+v, %v; want one refinement", hist, err)
		}
	})
}

// A manual refine makes no review call: the planner reads the
// instruction, the refinement is not automatic, the row's trigger is
// manual, and the session's review gate is left alone. A global refine
// targets the global store. A session that showed prompt cache reads is
// laid out verbatim (route A).
func TestManualRefine(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 1, nil)
		e.open("s1")
		e.fail("s1")
		e.ingest("s1", events.Usage, events.UsagePayload{Model: "deepseek-v4-flash", InputTokens: 900, CacheReadTokens: 4000, OutputTokens: 80})
		job := e.run(refinereview.Args{Session: "s1", Trigger: harness.Manual, Instruction: "remember the pager's offset rule"})
		if job.State != rivertype.JobStateCompleted {
			t.Fatalf("job %s: %v", job.State, job.Errors)
		}
		reqs := e.requests()
		if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[2].Content, planAsk) ||
			!strings.Contains(reqs[0].Messages[2].Content, "remember the pager's offset rule") {
			t.Fatalf("calls %+v, want the planner's only, with the instruction", reqs)
		}
		ref, err := e.harness.Refinement(context.Background(), refinereview.RefinementID(job.ID))
		if err != nil || ref.Automatic || ref.Scope != local("s1") {
			t.Fatalf("refinement %+v, %v", ref, err)
		}
		if rs := e.reviews("s1"); len(rs) != 1 || rs[0].Trigger != harness.Manual || rs[0].Outcome != harness.Approved || rs[0].Route != harness.RouteVerbatim {
			t.Fatalf("reviews %+v", rs)
		}
		if g := e.gate("s1"); g != (harness.Gate{}) {
			t.Fatalf("a manual refine moved the gate: %+v", g)
		}

		job = e.run(refinereview.Args{Session: "s1", Global: true, Trigger: harness.Manual})
		if job.State != rivertype.JobStateCompleted {
			t.Fatalf("global job %s: %v", job.State, job.Errors)
		}
		if ref, err := e.harness.Refinement(context.Background(), refinereview.RefinementID(job.ID)); err != nil || !ref.Scope.IsGlobal() {
			t.Fatalf("global refinement %+v, %v", ref, err)
		}
		if n := len(e.state(harness.Global)[harness.KindMemory]); n != 1 {
			t.Fatalf("%d global memories, want 1", n)
		}

		// An operator's global refine without a session reads no trajectory;
		// the fake plans the same stock note again, which rule 3 rejects:
		// the refinement is recorded, and its row is failed.
		job = e.run(refinereview.Args{Global: true, Trigger: harness.Manual})
		ref, err = e.harness.Refinement(context.Background(), refinereview.RefinementID(job.ID))
		if job.State != rivertype.JobStateCompleted || err != nil || !ref.Scope.IsGlobal() || ref.SessionID != "" {
			t.Fatalf("global refine without a session: %s %v, refinement %+v, %v", job.State, job.Errors, ref, err)
		}
		rs, err := e.harness.Reviews(context.Background(), harnesses.ReviewFilter{JobID: job.ID})
		if err != nil || len(rs) != 1 || rs[0].Outcome != harness.Failed || !rs[0].Scope.IsGlobal() || rs[0].Session != "" {
			t.Fatalf("its review %+v, %v", rs, err)
		}
	})
}

// Bad args are cancelled at once, naming what is wrong; an unknown
// session too.
func TestBadArgsCancel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 3, nil)
		for _, tt := range []struct {
			a    refinereview.Args
			want string
		}{
			{refinereview.Args{Session: "s1", Trigger: "weekly"}, `trigger "weekly"`},
			{refinereview.Args{Trigger: harness.Manual}, "session is required"},
			{refinereview.Args{Global: true, Trigger: harness.Compact}, "automatic review"},
			{refinereview.Args{Session: "nobody", Trigger: harness.Manual}, "session nobody not found"},
		} {
			job := e.run(tt.a)
			if job.State != rivertype.JobStateCancelled || len(job.Errors) == 0 || !strings.Contains(job.Errors[0].Error, tt.want) {
				t.Fatalf("%+v: %s %v, want cancelled naming %q", tt.a, job.State, job.Errors, tt.want)
			}
		}
		if n := len(e.requests()); n != 0 {
			t.Fatalf("bad args made %d calls", n)
		}
	})
}

// The job is unique per scope while it waits or runs, whatever the
// caller put in ScopeKey: a second review of a session's store joins the
// first, another session's or the global store's does not. A trigger
// that finds its scope's job queued keeps the review due.
func TestUniquePerScope(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 1, nil)
		e.open("s1")
		later := time.Now().Add(24 * time.Hour)
		insert := func(a refinereview.Args) bool {
			t.Helper()
			res, err := e.client.Insert(context.Background(), a, &river.InsertOpts{ScheduledAt: later})
			if err != nil {
				t.Fatal(err)
			}
			return res.UniqueSkippedAsDuplicate
		}
		if insert(refinereview.Args{Session: "s1", Trigger: harness.Manual, ScopeKey: "forged"}) {
			t.Fatal("the first job was a duplicate")
		}
		for _, tt := range []struct {
			a   refinereview.Args
			dup bool
		}{
			{refinereview.Args{Session: "s1", Trigger: harness.Compact, Instruction: "other args"}, true},
			{refinereview.Args{Session: "s2", Trigger: harness.Manual}, false},
			{refinereview.Args{Session: "s1", Global: true, Trigger: harness.Manual}, false},
		} {
			if got := insert(tt.a); got != tt.dup {
				t.Errorf("%+v: duplicate %t, want %t", tt.a, got, tt.dup)
			}
		}
		if a := argsOf(t, e.jobs()[0]); a.ScopeKey != "session:s1" {
			t.Fatalf("stored scope key %q", a.ScopeKey)
		}
		e.turns("s1", 25)
		if g := e.gate("s1"); !g.Pending || g.Enqueued || g.Turns != 25 {
			t.Fatalf("gate %+v: the review should stay due while s1's job waits", g)
		}
		if n := len(e.jobs()); n != 3 {
			t.Fatalf("%d jobs, want 3", n)
		}
	})
}

// A dead letter does not block the next review of its scope (the unique
// key holds only while a job waits or runs), and retrying it runs it
// again.
func TestDeadLetterBlocksNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		sc := &fakeds.Script{Rules: []fakeds.Rule{{Kind: "refine_review", Marker: reviewAsk, Fault: fakeds.FaultWrongSchema, Times: 1}}}
		e := start(t, s, sc, 1, nil)
		e.open("s1")
		e.compaction("s1")
		dead := e.onlyJob(1)
		if dead.State != rivertype.JobStateCancelled {
			t.Fatalf("first review %s, want a dead letter", dead.State)
		}
		e.advance(harnessCooldown)
		e.compaction("s1")
		if j := e.onlyJob(2); j.State != rivertype.JobStateCompleted {
			t.Fatalf("the next review %s", j.State)
		}
		if _, err := e.client.JobRetry(context.Background(), dead.ID); err != nil {
			t.Fatalf("retry the dead letter: %v", err)
		}
		enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
			return ev.Job.ID == dead.ID && ev.Job.State == rivertype.JobStateCompleted
		})
		if rs := e.reviews("s1"); len(rs) != 3 || rs[2].Outcome != harness.Failed || rs[0].JobID != dead.ID || rs[0].Outcome != harness.Declined {
			t.Fatalf("reviews %+v: want the failed, the next, and the retried one", rs)
		}
	})
}

// harnessCooldown is harness.cooldown's default.
const harnessCooldown = 20 * time.Minute

// With harness.require_global_approval a global refine waits as a
// proposal: nothing is applied, and the review row names the proposal.
func TestGlobalRefineWaitsForApproval(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil, 1, func(c *config.Config) { c.Harness.RequireGlobalApproval = true })
		e.open("s1")
		e.fail("s1")
		job := e.run(refinereview.Args{Session: "s1", Global: true, Trigger: harness.Manual})
		if job.State != rivertype.JobStateCompleted {
			t.Fatalf("job %s: %v", job.State, job.Errors)
		}
		rs := e.reviews("s1")
		if len(rs) != 1 || rs[0].Outcome != harness.Approved || rs[0].RefinementID == "" || rs[0].RefinementID == refinereview.RefinementID(job.ID) {
			t.Fatalf("reviews %+v, want approved naming the pending proposal", rs)
		}
		if _, err := e.harness.Refinement(context.Background(), refinereview.RefinementID(job.ID)); !errors.Is(err, harnesses.ErrNotFound) {
			t.Fatalf("refinement applied before approval: %v", err)
		}
		if n := len(e.state(harness.Global)[harness.KindMemory]); n != 0 {
			t.Fatalf("%d global memories before approval", n)
		}
		if _, err := e.harness.Decide(context.Background(), rs[0].RefinementID, true, "ok", store.DecidedByCLI); err != nil {
			t.Fatalf("accept the proposal: %v", err)
		}
		if n := len(e.state(harness.Global)[harness.KindMemory]); n != 1 {
			t.Fatalf("%d global memories after approval, want 1", n)
		}
	})
}

// An agent's manual refine (Source agent) applies on the automatic path:
// a protected entry of the global store is immutable there (rule 4) and
// the refinement records the agent as its source; a person's refine
// (Source admin, or "" for a job enqueued before the field) may edit it.
func TestAgentRefineIsAutomatic(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		upd := obj{"action": "update", "kind": "memory", "id": "m", "content": "abcde", "reason": "sharper"}
		sc := &fakeds.Script{Rules: []fakeds.Rule{answer(planAsk, obj{"id": "x", "summary": "sharpen m", "edits": []obj{upd}})}}
		e := start(t, s, sc, 1, nil)
		e.open("s1")
		ctx := context.Background()
		bundled := harness.Bundled
		if _, err := e.harness.Apply(ctx, harnesses.ApplyRequest{ID: "seed", Scope: harness.Global, Source: harnesses.ByAdmin,
			Proposal: harness.Proposal{Summary: "seed", Edits: []harness.Edit{{Action: harness.Create, Kind: harness.KindMemory,
				ID: "m", Content: ptr("abcd"), Protection: &bundled}}}}); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			src  harnesses.Source
			want harnesses.Source
		}{{harnesses.ByAgent, harnesses.ByAgent}, {harnesses.ByAdmin, harnesses.ByAdmin}, {"", harnesses.ByAdmin}} {
			job := e.run(refinereview.Args{Session: "s1", Global: true, Trigger: harness.Manual, Source: tt.src})
			if job.State != rivertype.JobStateCompleted {
				t.Fatalf("source %q: job %s: %v", tt.src, job.State, job.Errors)
			}
			agent := tt.src == harnesses.ByAgent
			ref, err := e.harness.Refinement(ctx, refinereview.RefinementID(job.ID))
			if err != nil || ref.Source != tt.want || ref.Automatic != agent || len(ref.Edits) != 1 {
				t.Fatalf("source %q: refinement %+v, %v", tt.src, ref, err)
			}
			// A person's update of the bundled entry applies (the second one
			// too: "abcde" again is a new version); the agent's is refused.
			if a := ref.Edits[0]; a.Applied == agent || agent && a.Error != harness.MsgProtected {
				t.Fatalf("source %q: edit %+v; want applied %v (else %q)", tt.src, a, !agent, harness.MsgProtected)
			}
		}
	})
}
