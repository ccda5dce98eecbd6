package harness

import "time"

// The review gate is the seed's driver (src/driver.ts) as pure
// transitions over a Gate the store keeps, so it survives restarts: the
// caller reads the gate in the ingest transaction, applies one transition
// and, when it reports start, enqueues the refine_review job in the same
// transaction.

// Gate is one scope's review bookkeeping (the seed's SessionGateState),
// kept in the store so it survives restarts.
type Gate struct {
	// Turns since the last attempt finished.
	Turns int
	// Pending: a review is due but its attempt has not started.
	Pending       bool
	PendingReason Trigger
	// Enqueued: a review job is queued or running (the unique job). It is
	// the seed's inFlight, which there too covers the attempt from its
	// start to its terminal result.
	Enqueued bool
	// LastAttemptAt is when the last attempt started (the cooldown's anchor).
	LastAttemptAt time.Time
	// EnqueuedAt is when the caller enqueued the job Enqueued stands for
	// (zero when it does not say): with LastAttemptAt, the last sign of
	// life of that job, so a gate whose job died can be told from one
	// whose first attempt has not started yet.
	EnqueuedAt time.Time
	// Closed: the session ended; late events start nothing.
	Closed bool
}

// GateRules are the harness.* keys the gate reads.
type GateRules struct {
	TurnInterval int
	Cooldown     time.Duration
	Compact      bool
}

// OnTurn counts a turn_end; start reports whether to enqueue a review now.
// While a review is due (parked by the cooldown) the count stands still,
// as in the seed, so the parked gate reports the turns that made it due;
// every later turn re-attempts it, so it runs on the first turn after the
// cooldown.
func OnTurn(g Gate, now time.Time, r GateRules) (next Gate, start bool) {
	if !g.Pending {
		g.Turns++
	}
	if g.Turns < r.TurnInterval {
		return g, false
	}
	return schedule(g, TurnInterval, now, r)
}

// OnCompaction makes a review due (when r.Compact).
func OnCompaction(g Gate, now time.Time, r GateRules) (next Gate, start bool) {
	if !r.Compact {
		return g, false
	}
	return schedule(g, Compact, now, r)
}

// schedule is the seed's scheduleGate: a closed gate or one with an
// attempt in flight takes no new work; otherwise the review is due (the
// first reason stays) and attempted.
func schedule(g Gate, reason Trigger, now time.Time, r GateRules) (Gate, bool) {
	if g.Closed || g.Enqueued {
		return g, false
	}
	if !g.Pending {
		g.Pending, g.PendingReason = true, reason
	}
	return attempt(g, now, r)
}

// attempt is the seed's attemptGate: the cooldown runs from the last
// attempt's start; a blocked attempt leaves the review due (and the
// counter as it is).
func attempt(g Gate, now time.Time, r GateRules) (Gate, bool) {
	if !g.LastAttemptAt.IsZero() && now.Sub(g.LastAttemptAt) < r.Cooldown {
		return g, false
	}
	return begin(g)
}

func begin(g Gate) (Gate, bool) {
	if !g.Pending || g.PendingReason == "" || g.Enqueued || g.Closed {
		return g, false
	}
	g.Enqueued = true
	return g, true
}

// OnSessionEnd drains a due review, ignoring the cooldown, and closes the
// gate (the seed's finalizeSession). An attempt already in flight is left
// to finish; a second call does nothing.
func OnSessionEnd(g Gate) (next Gate, start bool) {
	if g.Closed {
		return g, false
	}
	g, start = begin(g)
	g.Closed = true
	return g, start
}

// Started records an attempt's start (the cooldown's anchor): the review
// is no longer due, it is running.
func Started(g Gate, now time.Time) Gate {
	g.Pending, g.PendingReason, g.LastAttemptAt = false, "", now
	return g
}

// Finished records an attempt's end, whatever its outcome: the counter
// resets (only here, as in the seed) and a new review may be enqueued.
func Finished(g Gate) Gate {
	g.Turns, g.Enqueued, g.EnqueuedAt = 0, false, time.Time{}
	return g
}
