// Package testwait sizes a test's waits from the test's own deadline, so a
// slow machine makes a test slower, never red. A wait here is for something
// that will happen (a job finishing, a log line, a request); a test that
// needs a timeout to expire sets its own, short one.
package testwait

import (
	"context"
	"testing"
	"time"
)

// Without a deadline (go test -timeout 0) a wait lasts this long.
const noDeadline = 10 * time.Minute

// deadliner is the part of *testing.T that knows the binary's deadline;
// *testing.B and *testing.F have none.
type deadliner interface {
	Deadline() (time.Time, bool)
}

// Patience is how long t may wait for one thing: three quarters of the time
// left before the test binary's deadline, so the test fails with its own
// message (and its cleanups run) before go test kills the binary.
func Patience(t testing.TB) time.Duration {
	if d, ok := t.(deadliner); ok {
		if end, ok := d.Deadline(); ok {
			return max(time.Until(end)*3/4, time.Second)
		}
	}
	return noDeadline
}

// After is a channel that fires after Patience(t).
func After(t testing.TB) <-chan time.Time {
	return time.After(Patience(t))
}

// Context is t's context, also cancelled after Patience(t).
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), Patience(t))
	t.Cleanup(cancel)
	return ctx
}
