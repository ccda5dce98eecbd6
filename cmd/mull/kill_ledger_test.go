package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
)

// TestLedgerSurvivesSIGKILL kills a `mull serve` with SIGKILL at each phase
// of the ledger's protocol, on SQLite and PostgreSQL, while another
// process on the same database goes on serving: after a check granted a
// lease (the lease expires and the next verify-retry takes it over), after
// an observe answered (its effects are durable, its replay answers the
// same), in the middle of the observe, lease and batch-transition
// transactions (failpoints: nothing half-stored), and at a random moment
// of a burst of observes (the client resends what got no answer). After
// each, the ledger is consistent: one current fact per key, no lease on a
// fact that is not current, counters exactly what the requests earned.
func TestLedgerSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills mull serve processes")
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			start := time.Now()
			r := newLedgerRig(t, dialect, wsBlockPrefix+"kill-check", wsBlockPrefix+"kill-lease")
			a := r.serve(t)
			t.Run("after check", func(t *testing.T) { killAfterCheck(t, r, a) })
			t.Run("after observe", func(t *testing.T) { killAfterObserve(t, r, a) })
			t.Run("mid observe", func(t *testing.T) { killMidObserve(t, r, a) })
			t.Run("mid lease", func(t *testing.T) { killMidLease(t, r, a) })
			t.Run("mid settle", func(t *testing.T) { killMidSettle(t, r, a) })
			t.Run("mid batch transition", func(t *testing.T) { killMidBatch(t, r, a) })
			t.Run("during a burst", func(t *testing.T) { killDuringBurst(t, r, a) })
			t.Logf("%s took %s", dialect, time.Since(start).Round(time.Millisecond))
		})
	}
}

// killAfterCheck: a process answers a deny and dies: the deny is counted
// once, its replay elsewhere answers the same. Then a process grants a
// verify-retry (its leases last 2s) and dies before the call's observe. Until the lease expires the other
// process answers in-progress (a deny, in block mode); then the next
// verify-retry takes the lease over, and its failure is a new evidence
// version. A restarted process answers a replay from its receipt.
func killAfterCheck(t *testing.T, r *ledgerRig, a *serveProc) {
	ws := wsFor("kill-check", ledger.ModeBlock)
	const cmd = "pytest -x"
	k := r.serve(t)
	f := recordFailure(t, r, a, ws, "kc-0", cmd)
	// A deny answered just before the kill is counted, once.
	denyReq := negledger.CheckRequest{Call: bashCall(ws, "s1", "kc-deny", cmd)}
	deny := k.check(t, denyReq)
	k.kill9(t)
	if deny.Verdict != ledger.AnswerDeny {
		t.Fatalf("check before the retry is due: %+v, want deny", deny)
	}
	if again := a.check(t, denyReq); !sameJSON(again, deny) {
		t.Fatalf("the deny's replay after the kill: %+v, want %+v", again, deny)
	}
	r.consistent(t, ws, ledger.Savings{CallsDenied: 1})

	waitUntil(t, f.Retry.At)
	k = r.serve(t, "MULL_LEDGER_LEASE_TTL=2s")
	won := k.check(t, negledger.CheckRequest{Call: bashCall(ws, "s1", "kc-1", cmd)})
	if won.Verdict != ledger.AnswerVerifyRetry {
		t.Fatalf("check of a due fact: %+v, want verify-retry", won)
	}
	k.kill9(t)
	lease := r.get(t, f.ID).Lease
	if lease == nil || lease.ID != won.LeaseID || lease.Owner != "kc-1" {
		t.Fatalf("lease after the holder's process died: %+v, want %s of kc-1 until it expires", lease, won.LeaseID)
	}
	if d := lease.ExpiresAt.Sub(won.CheckedAt); d < 1500*time.Millisecond || d > 5*time.Second {
		t.Fatalf("lease lasts %s, want the granting process's lease_ttl = 2s (not the rig's 30s)", d)
	}
	waiting := negledger.CheckRequest{Call: bashCall(ws, "s2", "kc-2", cmd)}
	busy := a.check(t, waiting)
	if busy.Verdict != ledger.AnswerInProgress {
		t.Fatalf("check while the dead call's lease holds: %+v, want in-progress", busy)
	}
	waitUntil(t, lease.ExpiresAt)
	took := a.check(t, negledger.CheckRequest{Call: bashCall(ws, "s3", "kc-3", cmd)})
	if took.Verdict != ledger.AnswerVerifyRetry || took.LeaseID == won.LeaseID {
		t.Fatalf("check after the lease expired: %+v, want verify-retry with a new lease", took)
	}
	o := a.observe(t, negledger.ObserveRequest{Call: bashCall(ws, "s3", "kc-3", cmd), Outcome: failed(), LeaseID: took.LeaseID, CheckedAt: &took.CheckedAt})
	if o.Effect != negledger.EffectEvidence || o.FactID != f.ID {
		t.Fatalf("the new holder's failure: %+v, want new evidence of fact %d", o, f.ID)
	}
	if g := r.get(t, f.ID); g.Status != ledger.Active || g.Revision != f.Revision+1 || g.Lease != nil || !g.Retry.At.After(f.Retry.At) {
		t.Fatalf("after the takeover's failure: %+v; want active, one revision on, no lease, a later retry", g)
	}
	k = r.serve(t)
	if again := k.check(t, waiting); !sameJSON(again, busy) {
		t.Fatalf("replay on a restarted process: %+v, want the first answer %+v", again, busy)
	}
	r.consistent(t, ws, ledger.Savings{CallsDenied: 2})
}

// killAfterObserve: a process answers an observe and dies at once: the
// fact it recorded is there, and the replay on the other process is
// answered from the receipt, counting nothing.
func killAfterObserve(t *testing.T, r *ledgerRig, a *serveProc) {
	ws := wsFor("kill-observe", ledger.ModeWarn)
	// Its own survivor, whose facts stay due an hour: with the rig's 2s a
	// loaded machine can reach the retry before the repeat, which is then
	// a verification (evidence), not a duplicate.
	a = r.serve(t, retryInAnHour)
	k := r.serve(t, retryInAnHour)
	first := negledger.ObserveRequest{Call: bashCall(ws, "s0", "ko-0", "npm run lint"), Outcome: failed()}
	o := k.observe(t, first)
	k.kill9(t)
	if o.Effect != negledger.EffectRecorded || r.current(t, ws).ID != o.FactID {
		t.Fatalf("observe answered %+v before the kill; want its fact durable", o)
	}
	if again := a.observe(t, first); !sameJSON(again, o) {
		t.Fatalf("replay after the kill: %+v, want %+v", again, o)
	}
	dup := a.observe(t, negledger.ObserveRequest{Call: bashCall(ws, "s0", "ko-1", "npm run lint"), Outcome: failed()})
	if dup.Effect != negledger.EffectEvidence || !dup.Duplicate || dup.Note == "" {
		t.Fatalf("the repeat failure: %+v, want duplicate evidence with the warning", dup)
	}
	r.consistent(t, ws, ledger.Savings{DuplicateFailuresObserved: 1, WarningsEmitted: 1})
}

// retryInAnHour starts a process whose command facts stay due an hour:
// for the tests that count duplicates, which only a fact not yet due
// makes of a repeat failure.
const retryInAnHour = "MULL_LEDGER_COMMAND_RETRY_AFTER=1h"

// dieAt sends body to a process started with a failpoint and waits until
// it killed itself there, before answering.
func dieAt(t *testing.T, r *ledgerRig, point, path string, body any, env ...string) {
	t.Helper()
	k := r.serve(t, append(env, "MULL_TEST_FAILPOINT="+point)...)
	code, b, err := k.send(testwait.Context(t), path, body)
	if err == nil {
		t.Fatalf("%s answered %d %s: its failpoint %s was never reached", path, code, b, point)
	}
	k.waitDead(t)
}

// killMidObserve: the process dies inside observe's transaction, after the
// fact is written: neither the new fact nor, later, a duplicate's new
// evidence version is stored, and the resent request then counts once.
func killMidObserve(t *testing.T, r *ledgerRig, a *serveProc) {
	ws := wsFor("kill-mid-observe", ledger.ModeWarn)
	a = r.serve(t, retryInAnHour) // see killAfterObserve
	first := negledger.ObserveRequest{Call: bashCall(ws, "s0", "km-0", "make test"), Outcome: failed()}
	dieAt(t, r, store.FailpointLedgerRecord, "/v1/ledger/observe", first, retryInAnHour)
	if fs := r.facts(t, ws); len(fs) != 0 {
		t.Fatalf("facts after a kill inside the first observe: %+v, want none", fs)
	}
	if o := a.observe(t, first); o.Effect != negledger.EffectRecorded {
		t.Fatalf("the resent observe: %+v, want a new fact", o)
	}
	f := r.current(t, ws)
	dup := negledger.ObserveRequest{Call: bashCall(ws, "s1", "km-1", "make test"), Outcome: failed()}
	dieAt(t, r, store.FailpointLedgerRecord, "/v1/ledger/observe", dup, retryInAnHour)
	if g := r.current(t, ws); g.Revision != f.Revision || g.Savings != (ledger.Savings{}) {
		t.Fatalf("fact after a kill inside a duplicate's observe: %+v, want revision %d and no counts", g, f.Revision)
	}
	if o := a.observe(t, dup); o.Effect != negledger.EffectEvidence || !o.Duplicate {
		t.Fatalf("the resent duplicate: %+v, want duplicate evidence", o)
	}
	r.consistent(t, ws, ledger.Savings{DuplicateFailuresObserved: 1, WarningsEmitted: 1})
}

// killMidLease: the process dies inside check's transaction after it wrote
// the lease: no lease is left behind, so the next check wins one at once
// rather than after lease_ttl (30s in this rig).
func killMidLease(t *testing.T, r *ledgerRig, a *serveProc) {
	ws := wsFor("kill-lease", ledger.ModeBlock)
	f := recordFailure(t, r, a, ws, "kl-0", "go vet ./...")
	waitUntil(t, f.Retry.At)
	req := negledger.CheckRequest{Call: bashCall(ws, "s1", "kl-1", "go vet ./...")}
	dieAt(t, r, store.FailpointLedgerLease, "/v1/ledger/check", req)
	if g := r.get(t, f.ID); g.Lease != nil {
		t.Fatalf("lease after a kill inside the lease's transaction: %+v, want none", g.Lease)
	}
	if c := a.check(t, req); c.Verdict != ledger.AnswerVerifyRetry {
		t.Fatalf("the resent check: %+v, want verify-retry at once", c)
	}
	r.consistent(t, ws, ledger.Savings{})
}

// killMidSettle: the process dies inside the lease holder's observe, after
// it dropped the lease: the fact is still active under the holder's lease,
// and the holder's resent observe resolves it.
func killMidSettle(t *testing.T, r *ledgerRig, a *serveProc) {
	ws := wsFor("kill-settle", ledger.ModeWarn)
	f := recordFailure(t, r, a, ws, "ks-0", "tox")
	waitUntil(t, f.Retry.At)
	call := bashCall(ws, "s1", "ks-1", "tox")
	won := a.check(t, negledger.CheckRequest{Call: call})
	if won.Verdict != ledger.AnswerVerifyRetry {
		t.Fatalf("check of a due fact: %+v, want verify-retry", won)
	}
	settle := negledger.ObserveRequest{Call: call, Outcome: succeeded(), LeaseID: won.LeaseID, CheckedAt: &won.CheckedAt}
	dieAt(t, r, store.FailpointLedgerSettle, "/v1/ledger/observe", settle)
	if g := r.get(t, f.ID); g.Status != ledger.Active || g.Revision != f.Revision || g.Lease == nil || g.Lease.ID != won.LeaseID {
		t.Fatalf("fact after a kill inside the settlement: %s at %d, lease %+v; want active at %d under lease %s",
			g.Status, g.Revision, g.Lease, f.Revision, won.LeaseID)
	}
	if o := a.observe(t, settle); o.Effect != negledger.EffectResolved {
		t.Fatalf("the holder's resent success: %+v, want resolved", o)
	}
	if g := r.get(t, f.ID); g.Status != ledger.Resolved || g.Lease != nil {
		t.Fatalf("after the resent settlement: %s, lease %+v; want resolved, no lease", g.Status, g.Lease)
	}
	r.consistent(t, ws, ledger.Savings{})
}

// killMidBatch: the process dies inside the transition that stales four
// facts at once, after the first: none is stale, the file's new version is
// not stored (the facts still intercept), and the resent observation
// stales all four.
func killMidBatch(t *testing.T, r *ledgerRig, a *serveProc) {
	// Recorded with retries an hour off, so only the file's change can
	// let them run again.
	rec := r.serve(t, retryInAnHour)
	facts := batchFacts(t, r, rec, "kb")
	rec.kill9(t)
	dieAt(t, r, store.FailpointLedgerTransition, "/v1/ledger/fs", v2("kb"))
	checkUnchanged(t, r, a, facts, "kb")
	if resp := a.fs(t, v2("kb")); len(resp.Staled) != len(facts) {
		t.Fatalf("resent fs change staled %v, want all %d facts", resp.Staled, len(facts))
	}
	for _, f := range facts {
		if g := r.get(t, f.ID); g.Status != ledger.Stale {
			t.Fatalf("fact %d after the resent change: %s, want stale", f.ID, g.Status)
		}
	}
	r.consistent(t, batchCwd, ledger.Savings{})
}

// killDuringBurst: 48 failures of one command, from 4 sessions, are
// observed at once by two processes, and one of them is killed at a random
// moment after it answered its third (so some of its requests committed and
// others are in flight). The client resends to the survivor what got no
// answer (whether or not the dead process had committed it). The counts
// are those of 48 failures observed once each.
func killDuringBurst(t *testing.T, r *ledgerRig, a *serveProc) {
	ws := wsFor("kill-burst", ledger.ModeWarn)
	const n, sessions = 48, 4
	// Facts due in an hour on both processes: on a loaded machine the
	// burst outlasts the rig's 2s, and a failure after the retry is due
	// is a verification (evidence), not a duplicate.
	a = r.serve(t, retryInAnHour)
	k := r.serve(t, retryInAnHour)
	rng := killRNG(t)
	reqs := make([]negledger.ObserveRequest, n)
	for i := range reqs {
		reqs[i] = negledger.ObserveRequest{Call: bashCall(ws, fmt.Sprintf("s%d", i%sessions), fmt.Sprintf("kd-%d", i), "npm test"), Outcome: failed()}
	}
	var mu sync.Mutex
	var lost []int
	answered := make(chan struct{}, n)
	var killed time.Duration
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 3 {
			<-answered
		}
		killed = randomDelay(rng, 20*time.Millisecond)
		k.kill9(t)
	})
	parallel(n, func(i int) {
		if i%2 == 0 {
			a.observe(t, reqs[i])
			return
		}
		code, b, err := k.send(testwait.Context(t), "/v1/ledger/observe", reqs[i])
		if err == nil && code == 200 {
			answered <- struct{}{}
			return
		}
		if err == nil {
			t.Logf("observe %d on the dying process: %d %s", i, code, b)
		}
		mu.Lock()
		lost = append(lost, i)
		mu.Unlock()
	})
	if n/2-len(lost) < 3 {
		// Fewer than three answered (none should fail before the kill):
		// release the killer so the test reports instead of hanging.
		t.Errorf("only %d requests to the process answered before it was killed", n/2-len(lost))
		for range 3 {
			answered <- struct{}{}
		}
	}
	wg.Wait()
	t.Logf("killed %s after its third answer: %d of %d requests to it got no answer", killed, len(lost), n/2)
	for _, i := range lost {
		a.observe(t, reqs[i])
	}
	f := r.current(t, ws)
	if f.Revision != n || len(r.facts(t, ws)) != 1 {
		t.Fatalf("fact after the burst: %+v, want the only fact at revision %d", f, n)
	}
	r.consistent(t, ws, ledger.Savings{DuplicateFailuresObserved: n - 1, WarningsEmitted: sessions})
}
