// Package history decides which sessions may start learning jobs on their
// own (a retro at their end, an error retro, a count toward the "N sessions
// since" consolidation): only live ones. A session mull learned of from
// DSH's logs alone (mull import dsh, serve --watch-dsh) is history, and so
// is one whose last event is older than learn.max_session_age: learning
// from it costs LLM calls nobody asked for. `mull import dsh --learn` is
// the opt-in that starts them by hand.
package history

import "time"

// Reason is written as the end reason of a session the idle sweep closes
// without running its end hooks.
const Reason = "historical"

// Facts are what the rule looks at.
type Facts struct {
	// Pushed: at least one of the session's events came from the bridge
	// plugin (POST /v1/events), not from DSH's logs.
	Pushed bool
	// LastEventAt is the session's newest event; Now the store's clock.
	LastEventAt, Now time.Time
	// MaxAge is learn.max_session_age; zero or less means no age limit.
	MaxAge time.Duration
}

// Live reports whether the session may trigger learning jobs, and when not,
// why (for the log).
func Live(f Facts) (bool, string) {
	if !f.Pushed {
		return false, "only imported from DSH's logs"
	}
	if f.MaxAge > 0 && f.LastEventAt.Before(f.Now.Add(-f.MaxAge)) {
		return false, "last event older than learn.max_session_age"
	}
	return true, ""
}
