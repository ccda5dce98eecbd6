package negledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// heredoc is a long command that does not compress (Postgres compresses a
// long index entry before it gives up on it).
func heredoc(n int) string {
	var b strings.Builder
	b.WriteString("cat <<'EOF' > big.txt\n")
	h := sha256.Sum256([]byte("seed"))
	for b.Len() < n {
		b.WriteString(hex.EncodeToString(h[:]))
		b.WriteByte('\n')
		h = sha256.Sum256(h[:])
	}
	b.WriteString("EOF\nfalse")
	return b.String()
}

// A 6 KB heredoc failing twice: recorded, then its repeat is the same fact
// (warn mode: a duplicate with the warning; block mode: denied), on both
// databases (Postgres refused the key in a btree index before).
func TestLongCommandFailsTwice(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		cmd := heredoc(6 << 10)
		h := newHarness(t, s, warn())
		_, first := h.run(h.call("bash", bash(cmd)), exit(1))
		if first.Effect != EffectRecorded {
			t.Fatalf("first = %+v", first)
		}
		chk, again := h.run(h.call("bash", bash(cmd)), exit(1))
		if chk.Verdict != ledger.AnswerWarn || again.Effect != EffectEvidence || !again.Duplicate || again.FactID != first.FactID {
			t.Fatalf("second = %+v / %+v", chk, again)
		}
		hb := newHarness(t, s, block())
		if d := hb.check(hb.call("bash", bash(cmd))); d.Verdict != ledger.AnswerDeny || d.FactID != first.FactID {
			t.Fatalf("block check = %+v, want deny", d)
		}
	})
}

// Lengths are capped where they are stored; a command line over
// CommandMax is not tracked (allowed, nothing recorded).
func TestLengthCaps(t *testing.T) {
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
		c := h.call("bash", bash("make"))
		c.ToolCallID = strings.Repeat("c", IDMax+1)
		if _, err := h.svc.Check(ctx, CheckRequest{Call: c}); field(err) != "tool_call_id" {
			t.Fatalf("257-byte call id: %v", err)
		}
		c = h.call("bash", bash("make"))
		c.Session = strings.Repeat("s", IDMax+1)
		if _, err := h.svc.Observe(ctx, ObserveRequest{Call: c, Outcome: exit(1)}); field(err) != "session" {
			t.Fatalf("257-byte session: %v", err)
		}
		c = h.call("bash", bash("make"))
		c.Workspace = "/" + strings.Repeat("w", PathMax)
		if _, err := h.svc.Check(ctx, CheckRequest{Call: c}); field(err) != "workspace" {
			t.Fatalf("long workspace: %v", err)
		}
		c = h.call("read", read(strings.Repeat("p", PathMax+1)))
		if _, err := h.svc.Check(ctx, CheckRequest{Call: c}); field(err) != "args.file_path" {
			t.Fatalf("long path: %v", err)
		}
		c = h.call("bash", bash("make"))
		c.ToolCallID = strings.Repeat("c", IDMax)
		if _, err := h.svc.Check(ctx, CheckRequest{Call: c}); err != nil {
			t.Fatalf("256-byte call id: %v", err)
		}
		huge := strings.Repeat("x", CommandMax+1)
		for range 2 {
			chk, o := h.run(h.call("bash", bash(huge)), exit(1))
			if chk.Verdict != ledger.AnswerAllow || o.Effect != EffectNone {
				t.Fatalf("untracked command = %+v / %+v", chk, o)
			}
		}
		if n := rowCount(t, s, "ledger_facts"); n != 0 {
			t.Fatalf("an untracked command stored %d facts", n)
		}
	})
}

// One fs request carries at most FSObservationsMax (100) observations.
func TestFSObservationsCapped(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		obs := make([]FSObservation, FSObservationsMax+1)
		for i := range obs {
			obs[i] = FSObservation{DisplayPath: fmt.Sprintf("/w/f%d", i), Observed: ledger.Present, Version: "1"}
		}
		_, err := h.svc.ObserveFS(context.Background(), FSRequest{Session: "s1", Workspace: "/w", Cwd: "/w", Observations: obs})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "observations" {
			t.Fatalf("101 observations: %v", err)
		}
		if n := rowCount(t, s, "ledger_observations"); n != 0 {
			t.Fatalf("refused request stored %d observations", n)
		}
		r, err := h.svc.ObserveFS(context.Background(), FSRequest{Session: "s1", Workspace: "/w", Cwd: "/w", Observations: obs[:FSObservationsMax]})
		if err != nil || r.Stored != FSObservationsMax {
			t.Fatalf("100 observations = %+v, %v", r, err)
		}
	})
}

// The file back at the version it had: present v1, absent (the read
// fails: a fact), present v1 again stales the fact. No fs receipt turns
// the second v1 into a replay.
func TestFSSameObservationAgainStales(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		ctx := context.Background()
		fs := func(observed, version string) FSResponse {
			t.Helper()
			r, err := h.svc.ObserveFS(ctx, FSRequest{Session: "s1", Workspace: "/w", Cwd: "/w",
				Observations: []FSObservation{{Path: "a.go", DisplayPath: "/w/a.go", Observed: observed, Version: version}}})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		fs(ledger.Present, "v1")
		fs(ledger.Absent, "")
		_, o := h.run(h.call("read", read("a.go")), Outcome{Status: Failed, ErrorCode: ledger.CodeFSNotFound})
		if o.Effect != EffectRecorded {
			t.Fatalf("missing = %+v", o)
		}
		if d := h.check(h.call("read", read("a.go"))); d.Verdict != ledger.AnswerDeny {
			t.Fatalf("repeat = %+v, want deny", d)
		}
		if r := fs(ledger.Present, "v1"); len(r.Staled) != 1 || r.Staled[0] != o.FactID {
			t.Fatalf("present v1 again = %+v, want fact %d staled", r, o.FactID)
		}
		if c := h.check(h.call("read", read("a.go"))); c.Verdict != ledger.AnswerVerifyRetry {
			t.Fatalf("after the file came back = %+v, want verify-retry", c)
		}
	})
}

// A verify-retry whose check timed out on the plugin's side: the plugin
// never learnt lease_id, and its observe (same session and call) still
// settles the lease. The same call id from another session does not.
func TestHolderWithoutLeaseID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		_, o := h.run(h.call("bash", bash("make")), exit(2))
		h.clock.add(300 * time.Second)
		c := h.call("bash", bash("make"))
		vr := h.check(c)
		if vr.Verdict != ledger.AnswerVerifyRetry {
			t.Fatalf("check = %+v", vr)
		}
		other := c
		other.Session = "s2"
		if r := h.observe(other, ok0(), nil); r.Effect != EffectNone {
			t.Fatalf("another session's call %s = %+v, want none", c.ToolCallID, r)
		}
		if r := h.observe(c, ok0(), nil); r.Effect != EffectResolved || r.FactID != o.FactID {
			t.Fatalf("holder without lease_id = %+v, want resolved", r)
		}
		if f := h.fact(o.FactID); f.Status != ledger.Resolved || f.Lease != nil {
			t.Fatalf("fact = %+v", f)
		}
	})
}

// The seed's staleNote after the holder's settlement of a lease granted on
// a stale fact (plugin.ts: settled applied && staleAtGrant).
func TestHolderSettleOfStaleFactNotes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		ctx := context.Background()
		_, o := h.run(h.call("read", read("a.go")), Outcome{Status: Failed, ErrorCode: ledger.CodeFSNotFound})
		if _, err := h.svc.ObserveFS(ctx, FSRequest{Session: "s1", Workspace: "/w", Cwd: "/w",
			Observations: []FSObservation{{Path: "a.go", DisplayPath: "/w/a.go", Observed: ledger.Present, Version: "1"}}}); err != nil {
			t.Fatal(err)
		}
		c := h.call("read", read("a.go"))
		vr := h.check(c)
		if vr.Verdict != ledger.AnswerVerifyRetry {
			t.Fatalf("check = %+v", vr)
		}
		r := h.observe(c, Outcome{Status: Succeeded}, &vr)
		if r.Effect != EffectResolved || r.FactID != o.FactID || !strings.HasPrefix(r.Note,
			"Negative-ledger: a previous failure no longer applies because its evidence changed; a retry is allowed.") {
			t.Fatalf("holder's success = %+v, want resolved with the stale note", r)
		}
		// A lease granted on an active fact (TTL passed) notes nothing.
		_, cmd := h.run(h.call("bash", bash("make")), exit(2))
		h.clock.add(300 * time.Second)
		c = h.call("bash", bash("make"))
		vr = h.check(c)
		if r := h.observe(c, ok0(), &vr); r.Effect != EffectResolved || r.FactID != cmd.FactID || r.Note != "" {
			t.Fatalf("holder's success of an active fact = %+v, want no note", r)
		}
	})
}

// Credentials in a command line never come back: not in the fingerprint,
// its key, the preview or the claim; the fact still matches the command.
func TestCredentialsRedacted(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		const secret = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL"
		h := newHarness(t, s, block())
		ctx := context.Background()
		cmd := "OPENAI_API_KEY=" + secret + " ./deploy.sh"
		_, o := h.run(h.call("bash", bash(cmd)), exit(1))
		if o.Effect != EffectRecorded {
			t.Fatalf("first = %+v", o)
		}
		if d := h.check(h.call("bash", bash(cmd))); d.Verdict != ledger.AnswerDeny || strings.Contains(d.Reason, secret) {
			t.Fatalf("repeat = %+v, want deny without the secret", d)
		}
		h.known("s1", "/w")
		if _, err := h.svc.Record(ctx, RecordRequest{OperationID: "r1", Session: "s1", Workspace: "/w",
			Fingerprint: ledger.Fingerprint{Kind: ledger.APIUnavailable, Endpoint: "https://api.example/v1?key=" + secret},
			Claim:       "the v1 API answers 410 Gone",
			Evidence:    []ledger.Witness{{Role: ledger.Outcome, Kind: ledger.WitnessErrorCode, Code: secret}},
			Retry:       &ledger.RetryCondition{Type: ledger.RetryManual}}); err != nil {
			t.Fatal(err)
		}
		facts, err := h.svc.List(ctx, Filter{Workspace: "/w"})
		if err != nil || len(facts) != 2 {
			t.Fatalf("list = %+v, %v", facts, err)
		}
		for _, f := range append(facts, h.fact(o.FactID)) {
			b, _ := json.Marshal(f)
			if strings.Contains(string(b), secret) || strings.Contains(string(b), "sk-abc") {
				t.Fatalf("fact %d shows the secret: %s", f.ID, b)
			}
		}
		var raw string
		if err := s.DB.QueryRow(`select fingerprint_key || fingerprint || evidence from ledger_facts where id = $1`, o.FactID).Scan(&raw); err != nil ||
			strings.Contains(raw, secret) {
			t.Fatalf("stored row = %q, %v", raw, err)
		}
	})
}

// A fact that keeps changing under a request: exactly 3 rounds, then
// ErrConflict.
func TestConflictThreeRounds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		_, o := h.run(h.call("bash", bash("make")), exit(2))
		attempts := 0
		store.SetFailpointError(func(name string) error {
			if name == store.FailpointLedgerCommit {
				attempts++
				return fmt.Errorf("test: %w", store.ErrLedgerConflict)
			}
			return nil
		})
		defer store.SetFailpointError(nil)
		_, err := h.svc.Check(context.Background(), CheckRequest{Call: h.call("bash", bash("make"))})
		if !errors.Is(err, ErrConflict) || attempts != rounds || rounds != 3 {
			t.Fatalf("check = %v after %d attempts, want ErrConflict after 3", err, attempts)
		}
		store.SetFailpointError(nil)
		if f := h.fact(o.FactID); f.Savings.CallsDenied != 0 {
			t.Fatalf("a conflicted check counted: %+v", f.Savings)
		}
	})
}

// ledger_sweep deletes resolved and superseded facts 30 days after they
// last changed, with their events; current history younger stays.
func TestSweepPrunesOldFacts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		ctx := context.Background()
		_, old := h.run(h.call("bash", bash("make old")), exit(2))
		if _, err := h.svc.Resolve(ctx, old.FactID, "fixed"); err != nil {
			t.Fatal(err)
		}
		h.clock.add(FactKeep - time.Hour)
		_, young := h.run(h.call("bash", bash("make young")), exit(2))
		if _, err := h.svc.Resolve(ctx, young.FactID, "fixed"); err != nil {
			t.Fatal(err)
		}
		_, active := h.run(h.call("bash", bash("make active")), exit(2))
		h.clock.add(2 * time.Hour)
		rep, err := h.svc.Sweep(ctx)
		if err != nil || rep.FactsPruned != 1 {
			t.Fatalf("sweep = %+v, %v; want 1 fact pruned", rep, err)
		}
		if _, err := h.svc.Get(ctx, old.FactID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("old resolved fact: %v, want gone", err)
		}
		for _, id := range []int64{young.FactID, active.FactID} {
			h.fact(id)
		}
		var n int
		if err := s.DB.QueryRow(`select count(*) from ledger_events where fact_id = $1`, old.FactID).Scan(&n); err != nil || n != 0 {
			t.Fatalf("events of the pruned fact = %d, %v", n, err)
		}
	})
}

// An observe that changes nothing (a success with no fact) writes no
// transaction: no receipt, no row.
func TestObserveNoneWritesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		for range 3 {
			if _, o := h.run(h.call("bash", bash("make")), ok0()); o.Effect != EffectNone {
				t.Fatalf("success without a fact = %+v", o)
			}
		}
		if n := rowCount(t, s, "ledger_operations"); n != 0 {
			t.Fatalf("%d receipts written", n)
		}
	})
}
