package store

import "sync/atomic"

// Failpoints are named places inside a transaction where a test may stop
// the process (kill -9 itself) to prove the transaction is all or nothing.
// Nothing installs a hook in production: Failpoint is then one atomic load.
// cmd/mull's acceptance tests install one in the test binary standing in
// for `mull serve`, chosen by MULL_TEST_FAILPOINT (read only by test code).
const (
	// FailpointLedgerFSStaled: inside ObserveFS's transaction, after the
	// observations are stored and the first fact is made stale, before the
	// others and the commit.
	FailpointLedgerFSStaled = "ledger.fs.staled"
	// FailpointLedgerObserveWritten: inside Observe's transaction, after
	// the fact (or its new evidence version) is written, before the
	// receipt, the event and the commit.
	FailpointLedgerObserveWritten = "ledger.observe.written"
	// FailpointLedgerLeaseTaken: inside Check's lease transaction, after
	// the lease row is written, before the receipt and the commit.
	FailpointLedgerLeaseTaken = "ledger.lease.taken"
)

var failpoint atomic.Pointer[func(name string)]

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
