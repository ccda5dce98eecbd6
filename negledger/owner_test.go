package negledger

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func explicit(op, session, ws, endpoint string) RecordRequest {
	return RecordRequest{OperationID: op, Session: session, Workspace: ws,
		Fingerprint: ledger.Fingerprint{Kind: ledger.APIUnavailable, Endpoint: endpoint},
		Claim:       "the user has asked that git push never be used in this repo",
		Evidence:    []ledger.Witness{{Role: ledger.Outcome, Kind: ledger.WitnessErrorCode, Code: "E1"}},
		Retry:       &ledger.RetryCondition{Type: ledger.RetryNever}}
}

// An agent cannot write a constraint into another workspace's prompt, nor
// resolve or stale another workspace's facts: every agent request names its
// session; an explicit fact needs a session mull knows, in that workspace.
func TestSessionRequiredAndOwnWorkspaceOnly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		ctx := context.Background()
		field := func(err error) string {
			var fe *FieldError
			if !errors.As(err, &fe) {
				return fmt.Sprintf("not a FieldError: %v", err)
			}
			return fe.Field
		}
		if _, err := h.svc.Record(ctx, explicit("o1", "", "/victim", "https://x")); field(err) != "session" {
			t.Fatalf("record without a session: %v", err)
		}
		if _, err := h.svc.Record(ctx, explicit("o2", "ghost", "/victim", "https://x")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("record by an unknown session: %v, want not found", err)
		}
		h.known("attacker", "/mine")
		if _, err := h.svc.Record(ctx, explicit("o3", "attacker", "/victim", "https://x")); field(err) != "workspace" {
			t.Fatalf("record into another workspace: %v", err)
		}
		// The victim's fact, then the attacker tries to resolve it
		// (observe success) and to stale it (fs) from its own session.
		_, o := h.run(Call{ToolCallID: "v1", Tool: "read", Args: read("a.go"), Cwd: "/victim", Session: "victim", Workspace: "/victim"},
			Outcome{Status: Failed, ErrorCode: "FS_NOT_FOUND"})
		h.known("victim", "/victim")
		if o.FactID == 0 {
			t.Fatalf("victim's fact = %+v", o)
		}
		c := Call{ToolCallID: "a1", Tool: "read", Args: read("a.go"), Cwd: "/victim", Session: "attacker", Workspace: "/victim"}
		if _, err := h.svc.Observe(ctx, ObserveRequest{Call: c, Outcome: Outcome{Status: Succeeded}}); field(err) != "workspace" {
			t.Fatalf("resolve from another workspace: %v", err)
		}
		if _, err := h.svc.ObserveFS(ctx, FSRequest{Session: "attacker", Workspace: "/victim", Cwd: "/victim",
			Observations: []FSObservation{{Path: "a.go", DisplayPath: "/victim/a.go", Observed: "present", Version: "v1"}}}); field(err) != "workspace" {
			t.Fatalf("stale from another workspace: %v", err)
		}
		if f := h.fact(o.FactID); f.Status != ledger.Active || f.Revision != 1 {
			t.Fatalf("victim's fact after the attempts = %+v", f)
		}
		cons, err := h.svc.Constraints(ctx, "/victim", 10)
		if err != nil || len(cons) != 1 || cons[0].ID != o.FactID {
			t.Fatalf("victim's constraints = %+v, %v", cons, err)
		}
		if _, err := h.svc.Record(ctx, explicit("o4", "victim", "/victim", "https://ok")); err != nil {
			t.Fatalf("record by the workspace's own session: %v", err)
		}
	})
}

// A workspace holds at most ExplicitMax (100) current explicit facts: the
// 101st is refused naming the workspace, and a resolved one makes room.
func TestExplicitFactsCapped(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		ctx := context.Background()
		h.known("s1", "/w")
		var first ledger.Fact
		for i := range ExplicitMax {
			f, err := h.svc.Record(ctx, explicit(fmt.Sprintf("op-%d", i), "s1", "/w", fmt.Sprintf("https://api/%d", i)))
			if err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			if i == 0 {
				first = f
			}
		}
		_, err := h.svc.Record(ctx, explicit("op-over", "s1", "/w", "https://api/over"))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "workspace" {
			t.Fatalf("record %d: %v, want refused", ExplicitMax+1, err)
		}
		// The same fingerprint again is a new evidence version, not a new fact.
		if _, err := h.svc.Record(ctx, explicit("op-again", "s1", "/w", "https://api/3")); err != nil {
			t.Fatalf("record of a current fingerprint at the cap: %v", err)
		}
		if _, err := h.svc.Resolve(ctx, first.ID, "the endpoint is back"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.svc.Record(ctx, explicit("op-over-2", "s1", "/w", "https://api/over")); err != nil {
			t.Fatalf("record after one was resolved: %v", err)
		}
	})
}

// DSH call ids repeat across sessions (call_0, ...): two sessions' calls
// with the same id are two callers. Only one holds the lease, and each one's
// deny counts.
func TestSameCallIDTwoSessions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		mk := func(session string) Call {
			return Call{ToolCallID: "call_0", Tool: "bash", Args: bash("make"), Cwd: "/w", Session: session, Workspace: "/w"}
		}
		_, o := h.run(mk("s0"), exit(2))
		if o.Effect != EffectRecorded {
			t.Fatalf("first = %+v", o)
		}
		// Two sessions' denies of call_0: two denied calls.
		for _, sess := range []string{"sc", "sd"} {
			if c := h.check(mk(sess)); c.Verdict != ledger.AnswerDeny {
				t.Fatalf("%s = %+v, want deny", sess, c)
			}
		}
		if st := h.stats(); st.CallsDenied != 2 {
			t.Fatalf("calls denied = %d, want 2", st.CallsDenied)
		}
		h.clock.add(300 * time.Second)
		a := h.check(mk("sa"))
		b := h.check(mk("sb"))
		if a.Verdict != ledger.AnswerVerifyRetry || b.Verdict != ledger.AnswerInProgress {
			t.Fatalf("a = %+v, b = %+v: want one verify-retry and one in progress", a, b)
		}
		// b, not the holder, cannot settle a's lease with the same call id.
		ob := h.observe(mk("sb"), ok0(), &CheckResponse{LeaseID: a.LeaseID, CheckedAt: b.CheckedAt})
		if f := h.fact(o.FactID); f.Status != ledger.Active || f.Lease == nil {
			t.Fatalf("after b's observe (%+v) fact = %+v, want a's lease still there", ob, f)
		}
		if st := h.stats(); st.CallsDenied != 3 {
			t.Fatalf("calls denied = %d, want 3 (sc, sd, and b in progress)", st.CallsDenied)
		}
		oa := h.observe(mk("sa"), ok0(), &a)
		if oa.Effect != EffectResolved {
			t.Fatalf("holder a's observe = %+v", oa)
		}
	})
}
