package store

import "sync/atomic"

// Failpoints are named places inside a transaction where a test may stop
// the process (kill -9 itself) to prove the transaction is all or nothing.
// Nothing installs a hook in production: Failpoint is then one atomic load.
// cmd/mull's acceptance tests install one in the test binary standing in
// for `mull serve`, chosen by MULL_TEST_FAILPOINT (read only by test code).
const (
	// FailpointLedgerTransition: inside a batch transition (ObserveFS
	// staling the facts an observation contradicts), after the first fact
	// moved, before the others and the commit.
	FailpointLedgerTransition = "ledger.transition"
	// FailpointLedgerRecord: inside an observe's transaction, after the
	// new fact (or its new evidence version) is written, before its
	// counters, event, receipt and the commit.
	FailpointLedgerRecord = "ledger.record"
	// FailpointLedgerLease: inside a check's transaction, after the lease
	// row is written, before its event, the receipt and the commit.
	FailpointLedgerLease = "ledger.lease"
	// FailpointLedgerSettle: inside the lease holder's observe, after its
	// lease is dropped, before the fact is resolved (or given its new
	// evidence) and the commit.
	FailpointLedgerSettle = "ledger.settle"
)

// FailpointLedgerCommit: at the end of every ledger transaction, before
// its commit; an error from SetFailpointError's hook there rolls the
// transaction back and is returned (a test returns ErrLedgerConflict to
// prove the service's optimistic rounds).
const FailpointLedgerCommit = "ledger.commit"

var failpoint atomic.Pointer[func(name string)]

var failpointErr atomic.Pointer[func(name string) error]

// SetFailpointError installs fn, called at the failpoints that may fail
// (FailpointLedgerCommit) with their name; nil removes it. For tests only.
func SetFailpointError(fn func(name string) error) {
	if fn == nil {
		failpointErr.Store(nil)
		return
	}
	failpointErr.Store(&fn)
}

// FailpointError runs the installed error hook, if any, at the failpoint
// name.
func FailpointError(name string) error {
	if fn := failpointErr.Load(); fn != nil {
		return (*fn)(name)
	}
	return nil
}

// SetFailpoint installs fn, called at every failpoint with its name; nil
// removes it. For tests only.
func SetFailpoint(fn func(name string)) {
	if fn == nil {
		failpoint.Store(nil)
		return
	}
	failpoint.Store(&fn)
}

// Failpoint runs the installed hook, if any, at the failpoint name.
func Failpoint(name string) {
	if fn := failpoint.Load(); fn != nil {
		(*fn)(name)
	}
}
