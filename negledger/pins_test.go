package negledger

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The seed numbers, pinned at the service with the default config, each by
// values either side of it. Already pinned in negledger_test.go: 300 s
// command_retry_after (TestCheckBlockCommandCooldown: deny at 299 s,
// verify-retry at 300 s), 60 s lease_ttl (TestLeaseTTLTakeoverAndSweep:
// in-progress at 59 s, takeover at 60 s), 60 s warning_repeat_after
// (TestWarnModeDuplicatesAndDedupe: no note at 59 s, the note at 60 s).
// Here: 60 s command_evidence_max_age and the 256 warnings a session
// remembers.

// A declared dependency observed 60 s before the check is evidence (a
// precondition, staled by a change of the file); 61 s is too old: the
// fact stands on its cooldown only, and its deny says so.
func TestCommandEvidenceMaxAge60s(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		cfg := block()
		cfg.CommandDependencies = []config.CommandDependency{
			{Tool: "bash", CommandLine: "make a", Cwd: "/w", Files: []string{"/w/Makefile"}},
			{Tool: "bash", CommandLine: "make b", Cwd: "/w", Files: []string{"/w/Makefile"}},
			{Tool: "bash", CommandLine: "make c", Cwd: "/w", Files: []string{"/w/Makefile"}},
		}
		h := newHarness(t, s, cfg)
		ctx := context.Background()
		fs := func(v string) FSResponse {
			t.Helper()
			r, err := h.svc.ObserveFS(ctx, FSRequest{Session: "s1", Workspace: "/w", Cwd: "/w",
				Observations: []FSObservation{{DisplayPath: "/w/Makefile", Observed: ledger.Present, Version: v}}})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		fs("v1")
		// Checked 59 s and 60 s after the observation: evidence.
		h.clock.add(59 * time.Second)
		_, c59 := h.run(h.call("bash", bash("make c")), exit(2))
		h.clock.add(time.Second)
		_, a := h.run(h.call("bash", bash("make a")), exit(2))
		// Checked 61 s after it: too old.
		h.clock.add(time.Second)
		_, b := h.run(h.call("bash", bash("make b")), exit(2))
		fa, fb, fc := h.fact(a.FactID), h.fact(b.FactID), h.fact(c59.FactID)
		want := []ledger.Witness{{Role: ledger.Precondition, Kind: ledger.WitnessFileState, Path: "/w/Makefile",
			Observed: ledger.Present, Version: "v1"}}
		for name, f := range map[string]ledger.Fact{"59 s": fc, "60 s": fa} {
			if got := preconditions(f.Evidence); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("observed %s before the check: preconditions %+v, want %+v", name, got, want)
			}
		}
		if got := preconditions(fb.Evidence); len(got) != 0 {
			t.Errorf("observed 61 s before the check: preconditions %+v, want none", got)
		}
		// The deny's wording tells them apart.
		da := h.check(h.call("bash", bash("make a")))
		db := h.check(h.call("bash", bash("make b")))
		retryA := ledger.Stamp(t0.Add(60*time.Second + 300*time.Second))
		retryB := ledger.Stamp(t0.Add(61*time.Second + 300*time.Second))
		if da.Verdict != ledger.AnswerDeny || !strings.HasSuffix(da.Reason, "— retry condition not met (retry allowed at "+retryA+")") {
			t.Errorf("deny with evidence = %+v", da)
		}
		if db.Verdict != ledger.AnswerDeny ||
			!strings.HasSuffix(db.Reason, "— retry condition not met (no dependency evidence: cooldown only, retry allowed at "+retryB+")") {
			t.Errorf("deny without evidence = %+v", db)
		}
		// A change of the Makefile stales the facts with evidence only.
		r := fs("v2")
		if fmt.Sprint(r.Staled) != fmt.Sprint([]int64{fc.ID, fa.ID}) && fmt.Sprint(r.Staled) != fmt.Sprint([]int64{fa.ID, fc.ID}) {
			t.Errorf("Makefile changed: staled %v, want %d and %d (not %d)", r.Staled, fc.ID, fa.ID, fb.ID)
		}
		if d := h.check(h.call("bash", bash("make b"))); d.Verdict != ledger.AnswerDeny {
			t.Errorf("cooldown-only fact after the change = %+v, want still denied", d)
		}
	})
}

// The same in warn mode: the repeat's note says what it rests on.
func TestCommandEvidenceMaxAgeWarnNote(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		cfg := warn()
		cfg.CommandDependencies = []config.CommandDependency{
			{Tool: "bash", CommandLine: "make a", Cwd: "/w", Files: []string{"/w/Makefile"}},
			{Tool: "bash", CommandLine: "make b", Cwd: "/w", Files: []string{"/w/Makefile"}},
		}
		h := newHarness(t, s, cfg)
		if _, err := h.svc.ObserveFS(context.Background(), FSRequest{Session: "s1", Workspace: "/w", Cwd: "/w",
			Observations: []FSObservation{{DisplayPath: "/w/Makefile", Observed: ledger.Present, Version: "v1"}}}); err != nil {
			t.Fatal(err)
		}
		h.clock.add(60 * time.Second)
		h.run(h.call("bash", bash("make a")), exit(1))
		_, a := h.run(h.call("bash", bash("make a")), exit(1))
		h.clock.add(time.Second)
		h.run(h.call("bash", bash("make b")), exit(1))
		_, b := h.run(h.call("bash", bash("make b")), exit(1))
		if !strings.HasPrefix(a.Note, "Negative-ledger: this exact action previously failed and its evidence is unchanged.\n") {
			t.Errorf("60 s: note %q, want the seed's evidence unchanged", a.Note)
		}
		retryB := ledger.Stamp(t0.Add(61*time.Second + 300*time.Second))
		if !strings.HasPrefix(b.Note, "Negative-ledger: this exact action previously failed; no dependency evidence: cooldown only, retry allowed at "+retryB+".\n") {
			t.Errorf("61 s: note %q, want cooldown only", b.Note)
		}
	})
}

func preconditions(evidence []ledger.Witness) []ledger.Witness {
	var out []ledger.Witness
	for _, w := range evidence {
		if w.Role == ledger.Precondition {
			out = append(out, w)
		}
	}
	return out
}

// A session remembers the seed's 256 warnings: with 256 facts warned, the
// first one's repeat within warning_repeat_after is still deduped (255
// would have evicted it); the 257th warning evicts it, so its next repeat
// warns again (257 would have kept it).
func TestWarnDedupe256PerSession(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, warn())
		cmd := func(i int) string { return fmt.Sprintf("test %d", i) }
		fail := func(i int) ObserveResponse {
			t.Helper()
			return h.observe(h.call("bash", bash(cmd(i))), exit(1), nil)
		}
		for i := range 257 {
			if o := fail(i); o.Effect != EffectRecorded {
				t.Fatalf("first failure of %s = %+v", cmd(i), o)
			}
		}
		for i := range 256 { // warn facts 0..255: 256 remembered
			h.clock.add(time.Millisecond)
			if o := fail(i); o.Note == "" {
				t.Fatalf("first repeat of %s = %+v, want the warning", cmd(i), o)
			}
		}
		h.clock.add(time.Millisecond)
		if o := fail(0); !o.Duplicate || o.Note != "" {
			t.Fatalf("repeat of %s with 256 remembered = %+v, want deduped (kept)", cmd(0), o)
		}
		h.clock.add(time.Millisecond)
		if o := fail(256); o.Note == "" { // the 257th: evicts the oldest, fact 0
			t.Fatalf("first repeat of %s = %+v, want the warning", cmd(256), o)
		}
		h.clock.add(time.Millisecond)
		if o := fail(0); o.Note == "" {
			t.Fatalf("repeat of %s after the 257th warning = %+v, want the warning again (evicted)", cmd(0), o)
		}
		// Remembering fact 0 again evicted the next oldest, fact 1; fact 2
		// is still remembered.
		if o := fail(2); o.Note != "" {
			t.Fatalf("repeat of %s = %+v, want still deduped", cmd(2), o)
		}
		if n := rowCount(t, s, "ledger_warnings"); n != 256 {
			t.Fatalf("ledger_warnings holds %d rows, want 256", n)
		}
	})
}

// Constraints (the digest's Known failures) leave out a command whose
// cooldown has passed: the check answers verify-retry then, so the prompt
// must not say "do not do this". In at 299 s, out at 300 s.
func TestConstraintsLeaveOutDueRetries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, block())
		ctx := context.Background()
		_, cmdObs := h.run(h.call("bash", bash("make")), exit(1))
		_, fileObs := h.run(h.call("read", read("gone.txt")), Outcome{Status: Failed, ErrorCode: ledger.CodeFSNotFound})
		ids := func() []int64 {
			t.Helper()
			cs, err := h.svc.Constraints(ctx, "/w", 10)
			if err != nil {
				t.Fatal(err)
			}
			var out []int64
			for _, f := range cs {
				out = append(out, f.ID)
			}
			return out
		}
		h.clock.add(299 * time.Second)
		if got := ids(); len(got) != 2 {
			t.Fatalf("constraints at 299 s = %v, want the command %d and the file %d", got, cmdObs.FactID, fileObs.FactID)
		}
		h.clock.add(time.Second)
		if got := ids(); len(got) != 1 || got[0] != fileObs.FactID {
			t.Fatalf("constraints at 300 s = %v, want only the missing file %d", got, fileObs.FactID)
		}
		// The check agrees: a verify-retry, not a deny.
		if c := h.check(h.call("bash", bash("make"))); c.Verdict != ledger.AnswerVerifyRetry {
			t.Fatalf("check at 300 s = %+v", c)
		}
	})
}
