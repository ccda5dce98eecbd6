package retroerror

import (
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
)

var nowT0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestNothingToAsk(t *testing.T) {
	withEvents := func(primary bool, counts map[string]int64) store.Session {
		var n int64
		for _, c := range counts {
			n += c
		}
		return store.Session{ID: "s1", Workspace: "/home/dev/proj", Primary: primary, Events: n, Counts: counts}
	}
	for _, tt := range []struct {
		name    string
		s       store.Session
		retroOn bool
		want    string // a part of the reason; "" asks
	}{
		{"a primary session with a message", withEvents(true, map[string]int64{"session_start": 1, "message": 1}), true, ""},
		{"a subagent's session", withEvents(false, map[string]int64{"session_start": 1, "message": 3}), true, "is a subagent's: its parent session's retro"},
		{"a subagent's session, retros off: the subagent is said first", withEvents(false, map[string]int64{"message": 3}), false, "is a subagent's"},
		{"retros off for the workspace", withEvents(true, map[string]int64{"message": 3}), false, "retros are off for workspace /home/dev/proj"},
		{"only a start and an end", withEvents(true, map[string]int64{"session_start": 1, "session_end": 1}), true, "has no event to learn from yet"},
		{"no event at all", withEvents(true, nil), true, "has no event to learn from yet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := nothingToAsk(tt.s, tt.retroOn)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("nothingToAsk = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLearnedAlready(t *testing.T) {
	s := store.Session{ID: "s1", LastEventAt: nowT0}
	for _, tt := range []struct {
		name string
		last time.Time
		want string
	}{
		{"never retro'd", time.Time{}, ""},
		{"retro'd before the last event", nowT0.Add(-time.Minute), ""},
		{"retro'd at the last event", nowT0, "had its retro at 2026-11-29T12:00:00Z, after its last event (2026-11-29T12:00:00Z): nothing new"},
		{"retro'd after the last event", nowT0.Add(time.Hour), "had its retro at 2026-11-29T13:00:00Z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := learnedAlready(s, tt.last)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("learnedAlready = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRunAt(t *testing.T) {
	gap := time.Minute
	for _, tt := range []struct {
		name                 string
		lastScheduled, bound time.Time
		want                 time.Time
	}{
		{"no retro before, no bound: now", time.Time{}, time.Time{}, nowT0},
		{"last retro long ago: now", nowT0.Add(-time.Hour), time.Time{}, nowT0},
		{"last retro exactly a gap ago: now", nowT0.Add(-gap), time.Time{}, nowT0},
		{"last retro just now: a gap after it", nowT0.Add(-10 * time.Second), time.Time{}, nowT0.Add(50 * time.Second)},
		{"last retro scheduled later: a gap after it", nowT0.Add(time.Hour), time.Time{}, nowT0.Add(time.Hour + gap)},
		{"budget reset later than the gap: the reset", nowT0.Add(-10 * time.Second), nowT0.Add(3 * time.Hour), nowT0.Add(3 * time.Hour)},
		{"budget reset sooner than the gap: the gap", nowT0.Add(-10 * time.Second), nowT0.Add(time.Second), nowT0.Add(50 * time.Second)},
		{"bound in the past: now", time.Time{}, nowT0.Add(-time.Hour), nowT0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := runAt(nowT0, tt.lastScheduled, gap, tt.bound); !got.Equal(tt.want) {
				t.Fatalf("runAt = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQueuedMessage(t *testing.T) {
	for _, tt := range []struct {
		name string
		at   time.Time
		want string
	}{
		{"runs now", nowT0, "retro of session s1 queued as job 42"},
		{"runs later", nowT0.Add(90 * time.Second), "retro of session s1 queued as job 42; it runs at 2026-11-29T12:01:30Z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := queuedMessage("s1", 42, tt.at, nowT0); got != tt.want {
				t.Fatalf("queuedMessage = %q, want %q", got, tt.want)
			}
		})
	}
}
