package main

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
)

// TestLedgerAcceptance is seed 003's acceptance, black box over HTTP
// against two `mull serve` processes on one database, on SQLite (two
// processes on one file: the store's WAL and busy timeout make that safe on
// one machine) and on PostgreSQL. Every request of a burst is released at
// once and spread over both processes; the checks read the database.
func TestLedgerAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts mull serve processes")
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			start := time.Now()
			r := newLedgerRig(t, dialect, wsBlockPrefix+"same", wsBlockPrefix+"retry", wsBlockPrefix+"replay")
			procs := []*serveProc{r.serve(t), r.serve(t)}
			for _, mode := range []ledger.Mode{ledger.ModeWarn, ledger.ModeBlock} {
				t.Run("same failure at once/"+string(mode), func(t *testing.T) { sameFailureAtOnce(t, r, procs, mode) })
				t.Run("concurrent verify-retries/"+string(mode), func(t *testing.T) { concurrentVerifyRetries(t, r, procs, mode) })
			}
			t.Run("replayed requests", func(t *testing.T) { replayedRequests(t, r, procs) })
			t.Run("batch transition", func(t *testing.T) { batchTransition(t, r, procs) })
			t.Logf("%s took %s", dialect, time.Since(start).Round(time.Millisecond))
		})
	}
}

// wsFor is the test's workspace in mode: block workspaces are configured
// by name (wsBlockPrefix), the others are in warn mode, the default.
func wsFor(name string, mode ledger.Mode) string {
	if mode == ledger.ModeBlock {
		return wsBlockPrefix + name
	}
	return "/p/warn-" + name
}

// sameFailureAtOnce: 32 calls of one failing command, in 4 sessions, are
// observed at once, half by each process. One current fact; the other 31
// are duplicates, each a new evidence version; in warn mode each session
// is warned once (its later repeats are deduped within 60s), in block
// mode nobody is (the plugin denies before the run instead).
func sameFailureAtOnce(t *testing.T, r *ledgerRig, procs []*serveProc, mode ledger.Mode) {
	ws := wsFor("same", mode)
	const n, sessions = 32, 4
	resps := make([]negledger.ObserveResponse, n)
	parallel(n, func(i int) {
		call := bashCall(ws, fmt.Sprintf("s%d", i%sessions), fmt.Sprintf("same-%d", i), "npm test")
		resps[i] = procs[i%2].observe(t, negledger.ObserveRequest{Call: call, Outcome: failed()})
	})
	if t.Failed() {
		return
	}
	recorded := count(resps, func(o negledger.ObserveResponse) bool { return o.Effect == negledger.EffectRecorded })
	dups := count(resps, func(o negledger.ObserveResponse) bool { return o.Effect == negledger.EffectEvidence && o.Duplicate })
	notes := count(resps, func(o negledger.ObserveResponse) bool { return o.Note != "" })
	wantNotes := map[ledger.Mode]int{ledger.ModeWarn: sessions, ledger.ModeBlock: 0}[mode]
	if recorded != 1 || dups != n-1 || notes != wantNotes {
		t.Fatalf("effects: %d recorded, %d duplicate evidence, %d notes; want 1, %d, %d: %+v", recorded, dups, notes, n-1, wantNotes, resps)
	}
	f := r.current(t, ws)
	if f.Status != ledger.Active || f.Revision != n || len(r.facts(t, ws)) != 1 {
		t.Fatalf("fact %+v: want the only fact, active, at revision %d (one per failure)", f, n)
	}
	for _, o := range resps {
		if o.FactID != f.ID || o.Mode != mode {
			t.Fatalf("a response names fact %d in mode %s, want %d in %s", o.FactID, o.Mode, f.ID, mode)
		}
	}
	r.consistent(t, ws, ledger.Savings{DuplicateFailuresObserved: n - 1, WarningsEmitted: int64(wantNotes)})
}

// recordFailure records one failure of command in ws through procs[0] and
// returns the fact.
func recordFailure(t *testing.T, r *ledgerRig, p *serveProc, ws, id, command string) ledger.Fact {
	t.Helper()
	o := p.observe(t, negledger.ObserveRequest{Call: bashCall(ws, "s0", id, command), Outcome: failed()})
	if o.Effect != negledger.EffectRecorded || o.FactID == 0 {
		t.Fatalf("first failure of %q: %+v, want a new fact", command, o)
	}
	f := r.get(t, o.FactID)
	if f.Retry == nil || f.Retry.Type != ledger.RetryAfter || f.Retry.At.IsZero() {
		t.Fatalf("fact %d retry condition %+v, want after command_retry_after", f.ID, f.Retry)
	}
	// command_retry_after is 2s in the rig: due two seconds after the
	// failure (not 300s, the default, nor 1s or 0).
	if d := f.Retry.At.Sub(f.CreatedAt); d != 2*time.Second {
		t.Fatalf("fact %d is due %s after it was recorded, want command_retry_after = 2s", f.ID, d)
	}
	return f
}

// concurrentVerifyRetries: once a fact's retry is due, 16 calls checked at
// once over both processes get exactly one verify-retry (the lease); the
// other 15 are in-progress, counted as denied in block mode only. The
// holder's success resolves the fact and the next check allows.
func concurrentVerifyRetries(t *testing.T, r *ledgerRig, procs []*serveProc, mode ledger.Mode) {
	ws := wsFor("retry", mode)
	f := recordFailure(t, r, procs[0], ws, "vr-0", "go build ./...")
	denied := int64(0)
	early := procs[1].check(t, negledger.CheckRequest{Call: bashCall(ws, "s1", "vr-early", "go build ./...")})
	switch want := map[ledger.Mode]ledger.Answer{ledger.ModeWarn: ledger.AnswerWarn, ledger.ModeBlock: ledger.AnswerDeny}[mode]; {
	case early.Verdict != want || early.FactID != f.ID:
		t.Fatalf("check before the retry is due: %+v, want %s on fact %d", early, want, f.ID)
	case mode == ledger.ModeBlock:
		denied++
		if early.RetryAt == nil || !early.RetryAt.Equal(f.Retry.At) {
			t.Fatalf("deny's retry_at %v, want the fact's %v", early.RetryAt, f.Retry.At)
		}
	}
	waitUntil(t, f.Retry.At)

	const n = 16
	resps := make([]negledger.CheckResponse, n)
	parallel(n, func(i int) {
		resps[i] = procs[i%2].check(t, negledger.CheckRequest{Call: bashCall(ws, fmt.Sprintf("s%d", i), fmt.Sprintf("vr-%d", i+1), "go build ./...")})
	})
	if t.Failed() {
		return
	}
	holder := -1
	for i, c := range resps {
		switch {
		case c.Verdict == ledger.AnswerVerifyRetry && c.LeaseID != "" && holder == -1:
			holder = i
		case c.Verdict == ledger.AnswerInProgress && c.FactID == f.ID && c.LeaseID == "":
		default:
			t.Fatalf("check %d: %+v; want one verify-retry with a lease, the rest in-progress: %+v", i, c, resps)
		}
	}
	if holder == -1 {
		t.Fatalf("no check won the lease: %+v", resps)
	}
	if mode == ledger.ModeBlock {
		denied += n - 1
	}
	lease := r.get(t, f.ID).Lease
	if lease == nil || lease.ID != resps[holder].LeaseID || lease.Owner != fmt.Sprintf("vr-%d", holder+1) {
		t.Fatalf("fact's lease %+v, want %s held by vr-%d", lease, resps[holder].LeaseID, holder+1)
	}
	r.consistent(t, ws, ledger.Savings{CallsDenied: denied})

	// The holder's success settles it, on the other process.
	o := procs[(holder+1)%2].observe(t, negledger.ObserveRequest{Call: bashCall(ws, fmt.Sprintf("s%d", holder), fmt.Sprintf("vr-%d", holder+1), "go build ./..."),
		Outcome: succeeded(), LeaseID: resps[holder].LeaseID, CheckedAt: &resps[holder].CheckedAt})
	if o.Effect != negledger.EffectResolved || o.FactID != f.ID {
		t.Fatalf("the holder's success: %+v, want fact %d resolved", o, f.ID)
	}
	if g := r.get(t, f.ID); g.Status != ledger.Resolved || g.Lease != nil {
		t.Fatalf("after the holder's success: status %s lease %+v, want resolved with no lease", g.Status, g.Lease)
	}
	if c := procs[0].check(t, negledger.CheckRequest{Call: bashCall(ws, "s0", "vr-after", "go build ./...")}); c.Verdict != ledger.AnswerAllow {
		t.Fatalf("check after resolution: %+v, want allow", c)
	}
	r.consistent(t, ws, ledger.Savings{CallsDenied: denied})
}

// replayedRequests: a request sent again (the plugin's retry after a
// timeout, or a duplicate delivery), in sequence and at once, on either
// process, gets the first answer and counts nothing twice: an observe, a
// deny, and a verify-retry (whose replay must not lose to itself).
func replayedRequests(t *testing.T, r *ledgerRig, procs []*serveProc) {
	ws := wsFor("replay", ledger.ModeBlock)
	first := negledger.ObserveRequest{Call: bashCall(ws, "s0", "rp-0", "cargo test"), Outcome: failed()}
	a := procs[0].observe(t, first)
	b := procs[1].observe(t, first)
	if a.Effect != negledger.EffectRecorded || !sameJSON(a, b) {
		t.Fatalf("an observe and its replay: %+v then %+v, want the same new fact", a, b)
	}
	f := r.current(t, ws)

	again := negledger.ObserveRequest{Call: bashCall(ws, "s1", "rp-1", "cargo test"), Outcome: failed()}
	obs := make([]negledger.ObserveResponse, 8)
	parallel(len(obs), func(i int) { obs[i] = procs[i%2].observe(t, again) })
	for _, o := range obs {
		if o.Effect != negledger.EffectEvidence || !o.Duplicate || !sameJSON(o, obs[0]) {
			t.Fatalf("8 replays of a repeat failure: %+v, want one and the same duplicate evidence", obs)
		}
	}
	r.consistent(t, ws, ledger.Savings{DuplicateFailuresObserved: 1})

	deny := negledger.CheckRequest{Call: bashCall(ws, "s2", "rp-deny", "cargo test")}
	checks := make([]negledger.CheckResponse, 8)
	parallel(len(checks), func(i int) { checks[i] = procs[i%2].check(t, deny) })
	for _, c := range checks {
		if c.Verdict != ledger.AnswerDeny || c.Reason == "" || !sameJSON(c, checks[0]) {
			t.Fatalf("8 replays of a denied check: %+v, want the same deny", checks)
		}
	}
	r.consistent(t, ws, ledger.Savings{DuplicateFailuresObserved: 1, CallsDenied: 1})

	waitUntil(t, r.get(t, f.ID).Retry.At)
	verify := negledger.CheckRequest{Call: bashCall(ws, "s3", "rp-verify", "cargo test")}
	parallel(len(checks), func(i int) { checks[i] = procs[i%2].check(t, verify) })
	for _, c := range checks {
		if c.Verdict != ledger.AnswerVerifyRetry || c.LeaseID == "" || !sameJSON(c, checks[0]) {
			t.Fatalf("8 replays of the winning check: %+v, want the same verify-retry and lease", checks)
		}
	}
	other := procs[1].check(t, negledger.CheckRequest{Call: bashCall(ws, "s4", "rp-other", "cargo test")})
	if other.Verdict != ledger.AnswerInProgress {
		t.Fatalf("another call while the lease is held: %+v, want in-progress", other)
	}
	r.consistent(t, ws, ledger.Savings{DuplicateFailuresObserved: 1, CallsDenied: 2})

	// The holder fails again: a new evidence version, replayed at once.
	settle := negledger.ObserveRequest{Call: verify.Call, Outcome: failed(), LeaseID: checks[0].LeaseID, CheckedAt: &checks[0].CheckedAt}
	parallel(len(obs), func(i int) { obs[i] = procs[i%2].observe(t, settle) })
	for _, o := range obs {
		if o.Effect != negledger.EffectEvidence || o.FactID != f.ID || !sameJSON(o, obs[0]) {
			t.Fatalf("8 replays of the holder's failure: %+v, want the same new evidence of fact %d", obs, f.ID)
		}
	}
	g := r.get(t, f.ID)
	if g.Status != ledger.Active || g.Lease != nil || g.Revision != 3 || !g.Retry.At.After(f.Retry.At) {
		t.Fatalf("after the holder failed: %+v; want active at revision 3, no lease, a later retry time", g)
	}
	r.consistent(t, ws, ledger.Savings{DuplicateFailuresObserved: 1, CallsDenied: 2})
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// batchFacts records, through p, a failure of each batch command after an
// observation of the file they all declare, so each fact carries its state
// as a precondition, and returns the facts.
func batchFacts(t *testing.T, r *ledgerRig, p *serveProc, session string) []ledger.Fact {
	t.Helper()
	obs := p.fs(t, negledger.FSRequest{Session: session, Workspace: batchCwd, Cwd: batchCwd,
		Observations: []negledger.FSObservation{{Path: "dep.txt", DisplayPath: batchDep, Observed: ledger.Present, Version: "v1"}}})
	if obs.Stored == 0 {
		t.Fatalf("fs observation: %+v, want it stored", obs)
	}
	var facts []ledger.Fact
	for i, c := range batchCommands {
		call := bashCall(batchCwd, session, fmt.Sprintf("%s-batch-%d", session, i), c)
		chk := p.check(t, negledger.CheckRequest{Call: call})
		if chk.Verdict != ledger.AnswerAllow {
			t.Fatalf("first check of %q: %+v, want allow", c, chk)
		}
		o := p.observe(t, negledger.ObserveRequest{Call: call, Outcome: failed(), CheckedAt: &chk.CheckedAt})
		if o.Effect != negledger.EffectRecorded {
			t.Fatalf("failure of %q: %+v, want a new fact", c, o)
		}
		f := r.get(t, o.FactID)
		if count(f.Evidence, func(w ledger.Witness) bool { return w.Role == ledger.Precondition && w.Kind == ledger.WitnessFileState }) == 0 {
			t.Fatalf("fact of %q has no file-state precondition though its dependency was observed: %+v", c, f.Evidence)
		}
		facts = append(facts, f)
	}
	return facts
}

// v2 is the observation that the batch's file changed.
func v2(session string) negledger.FSRequest {
	return negledger.FSRequest{Session: session, Workspace: batchCwd, Cwd: batchCwd,
		Observations: []negledger.FSObservation{{Path: "dep.txt", DisplayPath: batchDep, Observed: ledger.Present, Version: "v2"}}}
}

// batchTransition: one fs observation that a file four facts depend on
// changed stales all four in one transition; checks then allow a
// verify-retry of each at once (before command_retry_after), and a replay
// of the observation changes nothing more.
func batchTransition(t *testing.T, r *ledgerRig, procs []*serveProc) {
	facts := batchFacts(t, r, procs[0], "batch")
	resp := procs[1].fs(t, v2("batch"))
	if len(resp.Staled) != len(facts) {
		t.Fatalf("fs change staled %v, want all %d facts", resp.Staled, len(facts))
	}
	for _, f := range facts {
		if g := r.get(t, f.ID); g.Status != ledger.Stale || g.LastTransition == nil || g.LastTransition.Kind != ledger.Stale {
			t.Fatalf("fact %d after the change: %s %+v, want stale", f.ID, g.Status, g.LastTransition)
		}
		c := procs[0].check(t, negledger.CheckRequest{Call: bashCall(batchCwd, "batch", fmt.Sprintf("after-%d", f.ID), f.Fingerprint.CommandLine)})
		if c.Verdict != ledger.AnswerVerifyRetry || c.FactID != f.ID {
			t.Fatalf("check of %q after its file changed: %+v, want verify-retry of fact %d", f.Fingerprint.CommandLine, c, f.ID)
		}
	}
	r.consistent(t, batchCwd, ledger.Savings{})
}

// checkUnchanged fails unless every fact is still active and intercepting:
// nothing of an interrupted transition was stored.
func checkUnchanged(t *testing.T, r *ledgerRig, p *serveProc, facts []ledger.Fact, session string) {
	t.Helper()
	for _, f := range facts {
		g := r.get(t, f.ID)
		if g.Status != ledger.Active || g.Revision != f.Revision || g.LastTransition != nil {
			t.Fatalf("fact %d after the interrupted transition: %s at revision %d %+v, want it untouched (active at %d)",
				f.ID, g.Status, g.Revision, g.LastTransition, f.Revision)
		}
		// Warn mode: the check reads, writes nothing, and would answer a
		// verify-retry had the file's new version been stored.
		c := p.check(t, negledger.CheckRequest{Call: bashCall(batchCwd, session, fmt.Sprintf("%s-probe-%d", session, f.ID), f.Fingerprint.CommandLine)})
		if c.Verdict != ledger.AnswerWarn {
			t.Fatalf("check of %q after the interrupted transition: %+v, want warn (evidence unchanged)", f.Fingerprint.CommandLine, c)
		}
	}
}
