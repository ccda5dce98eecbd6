package harness

import (
	"fmt"
	"testing"
	"time"
)

// The seed's defaults (driver.ts DEFAULT_TURN_INTERVAL, DEFAULT_COOLDOWN_MS;
// compact on).
var seedRules = GateRules{TurnInterval: 25, Cooldown: 20 * time.Minute, Compact: true}

// step is one event the gate sees at an offset from t0: "turn", "compact",
// "end", or the job's "started" / "finished".
type step struct {
	at   time.Duration
	what string
	n    int // repeat (turns)
}

func turns(at time.Duration, n int) step    { return step{at: at, what: "turn", n: n} }
func ev(at time.Duration, what string) step { return step{at: at, what: what, n: 1} }

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// run plays steps and returns the gate and the reasons of the starts.
func run(t *testing.T, g Gate, r GateRules, steps []step) (Gate, []Trigger) {
	t.Helper()
	var started []Trigger
	for _, s := range steps {
		now := t0.Add(s.at)
		for range s.n {
			var start bool
			switch s.what {
			case "turn":
				g, start = OnTurn(g, now, r)
			case "compact":
				g, start = OnCompaction(g, now, r)
			case "end":
				g, start = OnSessionEnd(g)
			case "started":
				g = Started(g, now)
			case "finished":
				g = Finished(g)
			default:
				t.Fatalf("unknown step %q", s.what)
			}
			if start {
				started = append(started, g.PendingReason)
			}
		}
	}
	return g, started
}

func TestGate(t *testing.T) {
	cooldown := seedRules.Cooldown
	// attempted is a gate whose last attempt started at t0 and finished.
	attempted := []step{turns(0, 25), ev(0, "started"), ev(time.Minute, "finished")}
	cases := []struct {
		name   string
		rules  GateRules
		steps  []step
		starts []Trigger
		check  func(Gate) string
	}{
		{name: "24 turns start no review", steps: []step{turns(0, 24)},
			check: func(g Gate) string { return want(g.Turns == 24 && !g.Pending && !g.Enqueued, g) }},
		{name: "the 25th turn starts one review", steps: []step{turns(0, 25)}, starts: []Trigger{TurnInterval},
			check: func(g Gate) string { return want(g.Turns == 25 && g.Pending && g.Enqueued, g) }},
		{name: "schedules a single gate once the turn interval is reached, not on every turn",
			steps: []step{turns(0, 40)}, starts: []Trigger{TurnInterval}},
		{name: "turns while the attempt runs start nothing and the counter resets when it finishes",
			steps:  []step{turns(0, 25), ev(0, "started"), turns(time.Second, 30), ev(time.Minute, "finished")},
			starts: []Trigger{TurnInterval},
			check:  func(g Gate) string { return want(g.Turns == 0 && !g.Pending && !g.Enqueued, g) }},
		{name: "a compaction 19m59s after an attempt start starts none",
			steps: append(attempted, ev(cooldown-time.Second, "compact")), starts: []Trigger{TurnInterval},
			check: func(g Gate) string { return want(g.Pending && g.PendingReason == Compact && !g.Enqueued, g) }},
		{name: "a compaction 20m after an attempt start starts one",
			steps: append(attempted, ev(cooldown, "compact")), starts: []Trigger{TurnInterval, Compact}},
		{name: "a compaction with compact off starts none", rules: GateRules{TurnInterval: 25, Cooldown: cooldown},
			steps: []step{ev(0, "compact")},
			check: func(g Gate) string { return want(!g.Pending, g) }},
		{name: "a first compaction starts one (no attempt yet, no cooldown)",
			steps: []step{ev(0, "compact")}, starts: []Trigger{Compact}},
		{name: "runs a cooldown-blocked due gate on a later turn once the cooldown elapses",
			steps:  append(attempted, turns(2*time.Minute, 25), turns(cooldown-time.Second, 3), turns(cooldown, 1)),
			starts: []Trigger{TurnInterval, TurnInterval}},
		{name: "a parked gate runs on the first event after the cooldown, a compaction too, with its first reason",
			steps:  append(attempted, turns(2*time.Minute, 25), ev(cooldown, "compact")),
			starts: []Trigger{TurnInterval, TurnInterval}},
		{name: "the counter is not reset by a blocked attempt and stands still while parked",
			steps:  append(attempted, turns(2*time.Minute, 25), turns(3*time.Minute, 10)),
			starts: []Trigger{TurnInterval},
			check:  func(g Gate) string { return want(g.Turns == 25 && g.Pending && !g.Enqueued, g) }},
		{name: "drains a due-but-unstarted gate (cooldown-blocked) at session end",
			steps:  append(attempted, turns(2*time.Minute, 25), ev(3*time.Minute, "end")),
			starts: []Trigger{TurnInterval, TurnInterval},
			check:  func(g Gate) string { return want(g.Closed && g.Enqueued, g) }},
		{name: "makes no start when the final drain has no pending work",
			steps: []step{turns(0, 3), ev(time.Minute, "end")},
			check: func(g Gate) string { return want(g.Closed && !g.Enqueued && g.Turns == 3, g) }},
		{name: "session end leaves an in-flight attempt to finish",
			steps: []step{turns(0, 25), ev(0, "started"), ev(time.Second, "end")}, starts: []Trigger{TurnInterval},
			check: func(g Gate) string { return want(g.Closed && g.Enqueued, g) }},
		{name: "is idempotent: a repeated session end does not duplicate work and blocks late events",
			steps: append(attempted, ev(2*time.Minute, "compact"), ev(3*time.Minute, "end"), ev(4*time.Minute, "end"),
				ev(5*time.Minute, "finished"), turns(cooldown*3, 60), ev(cooldown*3, "compact")),
			starts: []Trigger{TurnInterval, Compact}},
		{name: "a closed gate starts nothing",
			steps: []step{ev(0, "end"), turns(time.Minute, 30), ev(time.Minute, "compact")},
			check: func(g Gate) string { return want(g.Closed && !g.Pending && !g.Enqueued, g) }},
		{name: "a failed attempt re-triggers once a later turn crosses the interval",
			steps:  append(attempted, turns(cooldown, 24), turns(cooldown, 1)),
			starts: []Trigger{TurnInterval, TurnInterval}},
		{name: "a turn-interval cooldown of exactly 20m counts from the attempt's start, not its end",
			steps: []step{turns(0, 25), ev(0, "started"), ev(cooldown-time.Second, "finished"),
				turns(cooldown-time.Second, 25), turns(cooldown, 1)},
			starts: []Trigger{TurnInterval, TurnInterval}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := seedRules
			if c.rules != (GateRules{}) {
				r = c.rules
			}
			g, starts := run(t, Gate{}, r, c.steps)
			if fmt.Sprint(starts) != fmt.Sprint(c.starts) {
				t.Fatalf("starts = %v, want %v (gate %+v)", starts, c.starts, g)
			}
			if c.check != nil {
				if msg := c.check(g); msg != "" {
					t.Fatal(msg)
				}
			}
		})
	}
}

func want(ok bool, g Gate) string {
	if ok {
		return ""
	}
	return fmt.Sprintf("unexpected gate %+v", g)
}

func TestGateStartedAndFinished(t *testing.T) {
	g := Gate{Turns: 25, Pending: true, PendingReason: Compact, Enqueued: true}
	g = Started(g, t0)
	if g.Pending || g.PendingReason != "" || !g.LastAttemptAt.Equal(t0) || !g.Enqueued || g.Turns != 25 {
		t.Fatalf("Started: %+v", g)
	}
	g = Finished(g)
	if g.Turns != 0 || g.Enqueued || !g.LastAttemptAt.Equal(t0) {
		t.Fatalf("Finished: %+v", g)
	}
}
