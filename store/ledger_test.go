package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// twoProcesses opens two *Store handles (two sql.DB) on one fresh migrated
// database: what two mull processes sharing it see.
func twoProcesses(t *testing.T, fn func(t *testing.T, a, b *store.Store)) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			ctx := context.Background()
			open := func() *store.Store {
				s, err := store.Open(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			a := open()
			if _, err := a.Migrate(ctx, false); err != nil {
				t.Fatal(err)
			}
			fn(t, a, open())
		})
	}
}

func cmdInput(scope, line string) store.FactInput {
	fp := ledger.Fingerprint{Kind: ledger.CommandFailed, Tool: "bash", CommandLine: line, Cwd: scope}
	code := 1
	return store.FactInput{
		Scope: scope, Fingerprint: fp, Key: `{"commandLine":"` + line + `","cwd":"` + scope + `","tool":"bash"}`,
		Claim: "command exited 1 (bash)", Preview: line, Source: "auto",
		Evidence: []ledger.Witness{{Role: ledger.Outcome, Kind: ledger.WitnessCommandExit, ExitCode: &code}},
		Retry:    &ledger.RetryCondition{Type: ledger.RetryAfter, At: time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)},
	}
}

func op(call string) store.LedgerOp {
	return store.LedgerOp{Kind: "test", ToolCallID: call, Session: "s1"}
}

func record(t *testing.T, s *store.Store, call string, in store.FactInput) store.RecordResult {
	t.Helper()
	var res store.RecordResult
	_, _, err := s.LedgerWrite(context.Background(), op(call), func(lt *store.LedgerTx) (any, error) {
		var err error
		res, err = lt.RecordFact(in, 0, store.RecordFlags{})
		return res.Fact.ID, err
	})
	if err != nil {
		t.Fatalf("record %s: %v", call, err)
	}
	return res
}

func fixedClock(s *store.Store, at *time.Time) { s.SetClock(func() time.Time { return *at }) }

func TestLedgerRecordVersionsAndSupersede(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		in := cmdInput("/w", "make test")
		first := record(t, s, "c1", in)
		if !first.New || first.Fact.Revision != 1 || !first.Fact.Current || first.Fact.Status != ledger.Active {
			t.Fatalf("first record = %+v", first)
		}
		if first.Fact.Retry == nil || first.Fact.Retry.Type != ledger.RetryAfter || len(first.Fact.Evidence) != 1 {
			t.Fatalf("first fact lost its retry or evidence: %+v", first.Fact)
		}
		again := record(t, s, "c2", in)
		if again.New || again.Fact.ID != first.Fact.ID || again.Fact.Revision != 2 {
			t.Fatalf("second failure = %+v, want a new evidence version of %d", again, first.Fact.ID)
		}
		// The same tool call recording again changes nothing.
		if re := record(t, s, "c2", in); !re.Replayed || re.Fact.Revision != 2 {
			t.Fatalf("same call again = %+v, want replayed at revision 2", re)
		}
		// Resolve, then fail again: a new fact supersedes the resolved one.
		if _, _, err := s.LedgerWrite(ctx, op("c3"), func(lt *store.LedgerTx) (any, error) {
			return nil, lt.TransitionFacts([]store.TransitionItem{{FactID: first.Fact.ID, ExpectedRevision: 2,
				Transition: ledger.Transition{Kind: ledger.Resolved, By: "operator", Reason: "fixed"}}})
		}); err != nil {
			t.Fatal(err)
		}
		next := record(t, s, "c4", in)
		if !next.New || next.Superseded != first.Fact.ID || next.Fact.ID == first.Fact.ID {
			t.Fatalf("failure after resolve = %+v, want a new fact superseding %d", next, first.Fact.ID)
		}
		old, err := s.LedgerFact(ctx, first.Fact.ID)
		if err != nil {
			t.Fatal(err)
		}
		if old.Current || old.Status != ledger.Superseded || old.SupersededBy != next.Fact.ID {
			t.Fatalf("old fact = %+v, want superseded by %d", old, next.Fact.ID)
		}
		if old.LastTransition == nil || old.LastTransition.Reason != "fixed" || old.LastTransition.By != "operator" {
			t.Fatalf("old fact's transition = %+v", old.LastTransition)
		}
		cur, ok, err := s.LedgerCurrentFact(ctx, "/w", ledger.CommandFailed, in.Key)
		if err != nil || !ok || cur.ID != next.Fact.ID {
			t.Fatalf("current = %+v %v %v, want %d", cur, ok, err, next.Fact.ID)
		}
		if _, err := s.LedgerFact(ctx, 999); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing fact: %v, want ErrNotFound", err)
		}
		all, err := s.LedgerFacts(ctx, store.LedgerFilter{Scope: "/w"})
		if err != nil || len(all) != 2 {
			t.Fatalf("list = %d facts, %v", len(all), err)
		}
		cur2, err := s.LedgerFacts(ctx, store.LedgerFilter{Scope: "/w", CurrentOnly: true})
		if err != nil || len(cur2) != 1 || cur2[0].ID != next.Fact.ID {
			t.Fatalf("current list = %+v, %v", cur2, err)
		}
		sum, err := s.LedgerSummary(ctx, "/w")
		if err != nil || sum.Facts != 2 || sum.Current != 1 {
			t.Fatalf("summary = %+v, %v", sum, err)
		}
	})
}

// A1: two processes record the same first failure at once: one current
// fact, the second failure its new evidence version.
func TestLedgerConcurrentFirstRecordIsOneFact(t *testing.T) {
	twoProcesses(t, func(t *testing.T, a, b *store.Store) {
		in := cmdInput("/w", "go test ./...")
		var wg sync.WaitGroup
		results := make([]store.RecordResult, 2)
		errs := make([]error, 2)
		for i, s := range []*store.Store{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = s.LedgerWrite(context.Background(), op(fmt.Sprintf("call-%d", i)), func(lt *store.LedgerTx) (any, error) {
					var err error
					results[i], err = lt.RecordFact(in, 0, store.RecordFlags{})
					return nil, err
				})
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if results[0].Fact.ID != results[1].Fact.ID || results[0].New == results[1].New {
			t.Fatalf("results = %+v / %+v, want one new fact and one new version of it", results[0], results[1])
		}
		facts, err := a.LedgerFacts(context.Background(), store.LedgerFilter{Scope: "/w"})
		if err != nil || len(facts) != 1 || facts[0].Revision != 2 || !facts[0].Current {
			t.Fatalf("facts = %+v, %v; want one current fact at revision 2", facts, err)
		}
	})
}

// A2: N concurrent verify-retries over two processes: exactly one lease.
func TestLedgerConcurrentLeaseIsOne(t *testing.T) {
	twoProcesses(t, func(t *testing.T, a, b *store.Store) {
		f := record(t, a, "c0", cmdInput("/w", "make")).Fact
		const n = 10
		var wg sync.WaitGroup
		granted := make([]bool, n)
		owners := make([]string, n)
		for i := range n {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := s.LedgerWrite(context.Background(), op(fmt.Sprintf("retry-%d", i)), func(lt *store.LedgerTx) (any, error) {
					r, err := lt.AcquireLease(f.ID, f.Revision, fmt.Sprintf("lease-%d", i), time.Minute)
					granted[i], owners[i] = r.Granted, r.Lease.Owner
					return nil, err
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		winners := 0
		var winner string
		for i, g := range granted {
			if g {
				winners++
				winner = store.LedgerCaller("s1", fmt.Sprintf("retry-%d", i))
			}
		}
		if winners != 1 {
			t.Fatalf("%d calls got the lease, want exactly 1", winners)
		}
		for i, o := range owners {
			if o != winner {
				t.Fatalf("call %d sees owner %q, want %q", i, o, winner)
			}
		}
		got, err := a.LedgerFact(context.Background(), f.ID)
		if err != nil || got.Lease == nil || got.Lease.Owner != winner {
			t.Fatalf("fact lease = %+v, %v", got.Lease, err)
		}
	})
}

// An expired lease is taken over by the next verify-retry; its holder
// coming back settles nothing.
func TestLedgerExpiredLeaseTakeover(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		fixedClock(s, &now)
		f := record(t, s, "c0", cmdInput("/w", "make")).Fact
		acquire := func(call string) store.LeaseResult {
			var r store.LeaseResult
			if _, _, err := s.LedgerWrite(ctx, op(call), func(lt *store.LedgerTx) (any, error) {
				var err error
				r, err = lt.AcquireLease(f.ID, f.Revision, "lease-"+call, time.Minute)
				return nil, err
			}); err != nil {
				t.Fatal(err)
			}
			return r
		}
		if r := acquire("a"); !r.Granted {
			t.Fatalf("first = %+v", r)
		}
		if r := acquire("a"); !r.Granted || r.Lease.ID != "lease-a" {
			t.Fatalf("holder again = %+v, want its own lease", r)
		}
		now = now.Add(59 * time.Second)
		if r := acquire("b"); r.Granted || r.Lease.Owner != store.LedgerCaller("s1", "a") {
			t.Fatalf("before expiry = %+v, want a's lease", r)
		}
		now = now.Add(time.Second)
		r := acquire("b")
		if !r.Granted || !r.TookOver || r.Lease.Owner != store.LedgerCaller("s1", "b") || !r.Lease.ExpiresAt.Equal(now.Add(time.Minute)) {
			t.Fatalf("at expiry = %+v, want b taking over", r)
		}
		var settled store.SettleResult
		if _, _, err := s.LedgerWrite(ctx, op("a"), func(lt *store.LedgerTx) (any, error) {
			var err error
			settled, err = lt.SettleLease(f.ID, "lease-a", store.SettleSucceeded, nil)
			return nil, err
		}); err != nil {
			t.Fatal(err)
		}
		if settled.Applied || settled.Fact.Status != ledger.Active {
			t.Fatalf("old holder settle = %+v, want not applied", settled)
		}
		if _, _, err := s.LedgerWrite(ctx, op("b"), func(lt *store.LedgerTx) (any, error) {
			var err error
			settled, err = lt.SettleLease(f.ID, "lease-b", store.SettleSucceeded, nil)
			return nil, err
		}); err != nil {
			t.Fatal(err)
		}
		if !settled.Applied || settled.Fact.Status != ledger.Resolved || settled.Fact.Lease != nil {
			t.Fatalf("holder settle = %+v, want resolved without a lease", settled)
		}
		if settled.Fact.LastTransition == nil || settled.Fact.LastTransition.Via != "b" {
			t.Fatalf("transition = %+v, want via b", settled.Fact.LastTransition)
		}
		// Sweep: an expired lease is released.
		f2 := record(t, s, "c9", cmdInput("/w", "make other")).Fact
		if _, _, err := s.LedgerWrite(ctx, op("x"), func(lt *store.LedgerTx) (any, error) {
			_, err := lt.AcquireLease(f2.ID, f2.Revision, "lease-x", time.Minute)
			return nil, err
		}); err != nil {
			t.Fatal(err)
		}
		if n, err := s.LedgerReleaseExpiredLeases(ctx, now.Add(59*time.Second)); err != nil || n != 0 {
			t.Fatalf("release before expiry = %d, %v", n, err)
		}
		if n, err := s.LedgerReleaseExpiredLeases(ctx, now.Add(time.Minute)); err != nil || n != 1 {
			t.Fatalf("release at expiry = %d, %v", n, err)
		}
	})
}

// A3: a replayed request answers the first response and counts nothing.
func TestLedgerReceiptReplayCountsOnce(t *testing.T) {
	twoProcesses(t, func(t *testing.T, a, b *store.Store) {
		ctx := context.Background()
		f := record(t, a, "c0", cmdInput("/w", "make")).Fact
		runs := 0
		var mu sync.Mutex
		o := store.LedgerOp{RequestHash: "h-deny", Kind: "check", ToolCallID: "c1", Session: "s"}
		var wg sync.WaitGroup
		resps := make([][]byte, 4)
		for i := range 4 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, _, err := s.LedgerWrite(ctx, o, func(lt *store.LedgerTx) (any, error) {
					mu.Lock()
					runs++
					mu.Unlock()
					counted, err := lt.Deny(f.ID, f.Revision)
					return map[string]any{"counted": counted}, err
				})
				if err != nil {
					t.Error(err)
				}
				resps[i] = r
			}()
		}
		wg.Wait()
		for _, r := range resps {
			if string(r) != `{"counted":true}` {
				t.Fatalf("responses = %q, want every one the first's", resps)
			}
		}
		if runs != 1 {
			t.Fatalf("the decision ran %d times, want 1", runs)
		}
		// Another request (another hash) of the same call counts nothing
		// either: the event is unique per (fact, call, deny).
		r, replay, err := a.LedgerWrite(ctx, store.LedgerOp{RequestHash: "h-other", Kind: "check", ToolCallID: "c1", Session: "s"},
			func(lt *store.LedgerTx) (any, error) {
				counted, err := lt.Deny(f.ID, f.Revision)
				return counted, err
			})
		if err != nil || replay || string(r) != "false" {
			t.Fatalf("same call, new request = %s %v %v, want not counted", r, replay, err)
		}
		if got, ok, err := a.LedgerReceipt(ctx, "h-deny"); err != nil || !ok || string(got) != `{"counted":true}` {
			t.Fatalf("receipt = %s %v %v", got, ok, err)
		}
		sum, err := b.LedgerSummary(ctx, "")
		if err != nil || sum.CallsDenied != 1 || sum.FactsHit != 1 {
			t.Fatalf("summary = %+v, %v; want exactly one deny", sum, err)
		}
	})
}

// A batch transition is all or nothing: one stale revision rolls back
// every item.
func TestLedgerBatchTransitionAllOrNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f1 := record(t, s, "c1", cmdInput("/w", "a")).Fact
		f2 := record(t, s, "c2", cmdInput("/w", "b")).Fact
		f2 = record(t, s, "c3", cmdInput("/w", "b")).Fact // revision 2
		stale := ledger.Transition{Kind: ledger.Stale, StaleWitnesses: []string{ledger.WitnessFileState}}
		_, _, err := s.LedgerWrite(ctx, store.LedgerOp{RequestHash: "fs-1", Kind: "fs"}, func(lt *store.LedgerTx) (any, error) {
			return nil, lt.TransitionFacts([]store.TransitionItem{
				{FactID: f1.ID, ExpectedRevision: 1, Transition: stale},
				{FactID: f2.ID, ExpectedRevision: 1, Transition: stale}, // f2 is at 2
			})
		})
		if !errors.Is(err, store.ErrLedgerConflict) {
			t.Fatalf("batch with a stale revision: %v, want ErrLedgerConflict", err)
		}
		for _, id := range []int64{f1.ID, f2.ID} {
			f, err := s.LedgerFact(ctx, id)
			if err != nil || f.Status != ledger.Active {
				t.Fatalf("fact %d after the failed batch = %+v, %v; want untouched", id, f, err)
			}
		}
		if _, ok, _ := s.LedgerReceipt(ctx, "fs-1"); ok {
			t.Fatal("a rolled back batch left its receipt")
		}
		if _, _, err := s.LedgerWrite(ctx, store.LedgerOp{RequestHash: "fs-1", Kind: "fs"}, func(lt *store.LedgerTx) (any, error) {
			return nil, lt.TransitionFacts([]store.TransitionItem{
				{FactID: f1.ID, ExpectedRevision: 1, Transition: stale},
				{FactID: f2.ID, ExpectedRevision: 2, Transition: stale},
			})
		}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{f1.ID, f2.ID} {
			f, err := s.LedgerFact(ctx, id)
			if err != nil || f.Status != ledger.Stale || f.LastTransition == nil || f.LastTransition.StaleWitnesses[0] != ledger.WitnessFileState {
				t.Fatalf("fact %d = %+v, %v; want stale", id, f, err)
			}
		}
		stales, err := s.LedgerFacts(ctx, store.LedgerFilter{Scope: "/w", Statuses: []ledger.Status{ledger.Stale}})
		if err != nil || len(stales) != 2 {
			t.Fatalf("stale list = %d, %v", len(stales), err)
		}
	})
}

// Counters are exact: a duplicate and a warning count once per tool call.
func TestLedgerCountersExact(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		in := cmdInput("/w", "make")
		f := record(t, s, "c0", in).Fact
		dup := func(call string) store.RecordResult {
			var r store.RecordResult
			if _, _, err := s.LedgerWrite(ctx, op(call), func(lt *store.LedgerTx) (any, error) {
				var err error
				r, err = lt.RecordFact(in, 0, store.RecordFlags{Duplicate: true, Warn: true})
				return nil, err
			}); err != nil {
				t.Fatal(err)
			}
			return r
		}
		if r := dup("c1"); !r.Counted.Duplicate || !r.Counted.Warn {
			t.Fatalf("first duplicate = %+v", r)
		}
		if r := dup("c1"); r.Counted.Duplicate || !r.Replayed {
			t.Fatalf("same call again = %+v, want nothing counted", r)
		}
		dup("c2")
		got, _ := s.LedgerFact(ctx, f.ID)
		if got.Savings != (ledger.Savings{DuplicateFailuresObserved: 2, WarningsEmitted: 2}) || got.Revision != 3 {
			t.Fatalf("savings = %+v at revision %d, want 2 duplicates and 2 warnings at 3", got.Savings, got.Revision)
		}
		if _, _, err := s.LedgerWrite(ctx, op("c3"), func(lt *store.LedgerTx) (any, error) {
			return lt.Deny(f.ID, 2) // a stale decision
		}); !errors.Is(err, store.ErrLedgerConflict) {
			t.Fatalf("deny at an old revision: %v, want ErrLedgerConflict", err)
		}
		got, _ = s.LedgerFact(ctx, f.ID)
		if got.Savings.CallsDenied != 0 {
			t.Fatalf("a conflicting deny counted: %+v", got.Savings)
		}
	})
}

func TestLedgerObservationsAndWarnings(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		fixedClock(s, &now)
		if _, _, err := s.LedgerWrite(ctx, op("fs"), func(lt *store.LedgerTx) (any, error) {
			return nil, lt.UpsertObservations("/w", []store.LedgerObservation{
				{Key: "/w\x00a.txt", Observed: ledger.Absent}, {Key: "/w/a.txt", Observed: ledger.Present, Version: "v1"}})
		}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.LedgerWrite(ctx, op("fs2"), func(lt *store.LedgerTx) (any, error) {
			return nil, lt.UpsertObservations("/w", []store.LedgerObservation{{Key: "/w/a.txt", Observed: ledger.Present, Version: "v2"}})
		}); err != nil {
			t.Fatal(err)
		}
		obs, err := s.LedgerObservations(ctx, "/w", []string{"/w\x00a.txt", "/w/a.txt", "/w/b.txt"})
		if err != nil || len(obs) != 2 || obs["/w/a.txt"].Version != "v2" || obs["/w\x00a.txt"].Observed != ledger.Absent ||
			!obs["/w/a.txt"].ObservedAt.Equal(now) {
			t.Fatalf("observations = %+v, %v", obs, err)
		}
		if _, _, err := s.LedgerWrite(ctx, op("bad"), func(lt *store.LedgerTx) (any, error) {
			return nil, lt.UpsertObservations("/w", []store.LedgerObservation{{Key: "k", Observed: "maybe"}})
		}); err == nil {
			t.Fatal("observed=maybe was stored")
		}
		for i := range 4 {
			now = now.Add(time.Second)
			if _, _, err := s.LedgerWrite(ctx, op("w"), func(lt *store.LedgerTx) (any, error) {
				return nil, lt.RememberWarning("s1", int64(i+1), "ev", 3)
			}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.LedgerWrite(ctx, op("r"), func(lt *store.LedgerTx) (any, error) {
			if w, err := lt.LastWarned("s1", 1); err != nil || w.Found || w.Entries != 3 {
				return nil, fmt.Errorf("oldest = %+v, %v; want forgotten, 3 entries", w, err)
			}
			if w, err := lt.LastWarned("s1", 4); err != nil || !w.Found || !w.At.Equal(now) || w.Evidence != "ev" {
				return nil, fmt.Errorf("newest = %+v %v", w, err)
			}
			if err := lt.ForgetWarnings(4); err != nil {
				return nil, err
			}
			if w, err := lt.LastWarned("s1", 4); err != nil || w.Found {
				return nil, fmt.Errorf("forgotten = %+v %v", w, err)
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		r, o, w, err := s.LedgerPrune(ctx, now.Add(time.Hour), now.Add(time.Hour), now.Add(time.Hour))
		if err != nil || r != 0 || o != 2 || w != 2 {
			t.Fatalf("prune = %d %d %d %v", r, o, w, err)
		}
	})
}

// A process dying at a failpoint inside a ledger transaction (here: a
// panic, which rolls it back as a crash does) leaves nothing half-stored.
func TestLedgerFailpointsAllOrNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f1 := record(t, s, "c1", cmdInput("/w", "a")).Fact
		f2 := record(t, s, "c2", cmdInput("/w", "b")).Fact
		die := func(point string, fn func(lt *store.LedgerTx) (any, error)) {
			t.Helper()
			store.SetFailpoint(func(name string) {
				if name == point {
					panic("killed at " + name)
				}
			})
			defer store.SetFailpoint(nil)
			defer func() {
				if r := recover(); r == nil {
					t.Fatalf("failpoint %s was never reached", point)
				}
			}()
			_, _, _ = s.LedgerWrite(ctx, store.LedgerOp{RequestHash: "h-" + point, Kind: "test", ToolCallID: "k"}, fn)
		}
		stale := ledger.Transition{Kind: ledger.Stale}
		die(store.FailpointLedgerTransition, func(lt *store.LedgerTx) (any, error) {
			return nil, lt.TransitionFacts([]store.TransitionItem{{FactID: f1.ID, ExpectedRevision: 1, Transition: stale},
				{FactID: f2.ID, ExpectedRevision: 1, Transition: stale}})
		})
		die(store.FailpointLedgerRecord, func(lt *store.LedgerTx) (any, error) {
			return lt.RecordFact(cmdInput("/w", "a"), 0, store.RecordFlags{Duplicate: true})
		})
		die(store.FailpointLedgerLease, func(lt *store.LedgerTx) (any, error) {
			return lt.AcquireLease(f1.ID, 1, "l1", time.Minute)
		})
		for _, id := range []int64{f1.ID, f2.ID} {
			f, err := s.LedgerFact(ctx, id)
			if err != nil || f.Status != ledger.Active || f.Revision != 1 || f.Lease != nil || f.Savings != (ledger.Savings{}) {
				t.Fatalf("fact %d after the kills = %+v, %v; want untouched", id, f, err)
			}
		}
		for _, p := range []string{store.FailpointLedgerTransition, store.FailpointLedgerRecord, store.FailpointLedgerLease} {
			if _, ok, _ := s.LedgerReceipt(ctx, "h-"+p); ok {
				t.Fatalf("a receipt survived the kill at %s", p)
			}
		}
	})
}

// A session remembers warnings for at most ledger.DedupeMax (256) facts:
// the 257th forgets the oldest.
func TestLedgerWarningsCapped(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		fixedClock(s, &now)
		if _, _, err := s.LedgerWrite(ctx, op("w"), func(lt *store.LedgerTx) (any, error) {
			for i := range ledger.DedupeMax + 1 {
				now = now.Add(time.Millisecond)
				lt.Now = now
				if err := lt.RememberWarning("s1", int64(i+1), "", ledger.DedupeMax); err != nil {
					return nil, err
				}
				w, err := lt.LastWarned("s1", 1)
				if err != nil {
					return nil, err
				}
				switch {
				case i < ledger.DedupeMax && (!w.Found || w.Entries != i+1):
					return nil, fmt.Errorf("after %d warnings: %+v, want the first kept", i+1, w)
				case i == ledger.DedupeMax && (w.Found || w.Entries != ledger.DedupeMax):
					return nil, fmt.Errorf("after %d warnings: %+v, want the first forgotten and %d kept", i+1, w, ledger.DedupeMax)
				}
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}
