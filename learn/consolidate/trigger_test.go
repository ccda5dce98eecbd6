package consolidate_test

import (
	"testing"
	"time"

	"github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
)

func TestDue(t *testing.T) {
	h := time.Hour
	for _, c := range []struct {
		name     string
		last     time.Time
		inFlight bool
		want     bool
	}{
		{"never ran", time.Time{}, false, true},
		{"never ran, one in flight", time.Time{}, true, false},
		{"cooldown just over", now.Add(-6 * h), false, true},
		{"a second inside the cooldown", now.Add(-6*h + time.Second), false, false},
		{"cooldown over but in flight", now.Add(-7 * h), true, false},
	} {
		if got := consolidate.Due(c.last, c.inFlight, now, 6*h); got != c.want {
			t.Errorf("%s: Due = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSkip(t *testing.T) {
	recent := now.Add(-time.Hour)
	base := consolidate.Request{Cooldown: 6 * time.Hour, Now: now, New: 3, Watermark: 40}
	with := func(f func(*consolidate.Request)) consolidate.Request { r := base; f(&r); return r }
	for _, c := range []struct {
		name string
		r    consolidate.Request
		want string
	}{
		{"new memories, never ran", base, ""},
		{"in flight beats everything, manual too", with(func(r *consolidate.Request) { r.InFlight, r.RunID, r.Manual = true, "wf_1", true }),
			"skipped: run wf_1 is still in flight"},
		{"inside the cooldown", with(func(r *consolidate.Request) { r.LastStarted = recent }),
			"skipped: cooldown until 2026-11-29T17:00:00Z"},
		{"manual skips the cooldown", with(func(r *consolidate.Request) { r.LastStarted, r.Manual = recent, true }), ""},
		{"a dry run skips the cooldown", with(func(r *consolidate.Request) { r.LastStarted, r.DryRun = recent, true }), ""},
		{"nothing new", with(func(r *consolidate.Request) { r.New = 0 }), "skipped: nothing new since memory 40"},
		{"nothing new, dry run", with(func(r *consolidate.Request) { r.New, r.DryRun = 0, true }), "skipped: nothing new since memory 40"},
		{"nothing new but manual", with(func(r *consolidate.Request) { r.New, r.Manual = 0, true }), ""},
	} {
		if got := consolidate.Skip(c.r); got != c.want {
			t.Errorf("%s: Skip = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSessionsDue(t *testing.T) {
	for _, c := range []struct {
		since, after int
		due, want    bool
	}{{2, 3, true, false}, {3, 3, true, true}, {4, 3, true, true}, {3, 3, false, false}} {
		if got := consolidate.SessionsDue(c.since, c.after, c.due); got != c.want {
			t.Errorf("SessionsDue(%d, %d, %v) = %v, want %v", c.since, c.after, c.due, got, c.want)
		}
	}
}

func TestCountNewAndBase(t *testing.T) {
	old := mem(10, memory.Fact, "old fact")
	fresh := mem(11, memory.Lesson, "new lesson")
	merged := mem(12, memory.Fact, "merged fact")
	merged.Origin = memory.OriginSleep
	principle := mem(13, memory.Principle, "a principle")
	principle.Origin = memory.OriginSleep
	gone := mem(14, memory.Fact, "invalidated")
	gone.InvalidAt = now
	held := mem(15, memory.Fact, "quarantined")
	held.Quarantined = true
	ms := []memory.Memory{old, fresh, merged, principle, gone, held}
	// Newer than 10: 11, 14, 15 (12 and 13 are consolidation's own).
	if got := consolidate.CountNew(ms, 10); got != 3 {
		t.Errorf("CountNew since 10 = %d, want 3", got)
	}
	if got := consolidate.CountNew(ms, 15); got != 0 {
		t.Errorf("CountNew since 15 = %d, want 0", got)
	}
	// Live and not derived: 10, 11, 12.
	if got := consolidate.CountBase(ms); got != 3 {
		t.Errorf("CountBase = %d, want 3", got)
	}
}

// Candidates leave derived memories out: a principle repeated twice is
// replaced by the derive step, never merged.
func TestCandidatesSkipDerived(t *testing.T) {
	a := mem(1, memory.Principle, "always run the full test suite before pushing to main")
	b := mem(2, memory.Principle, "always run the full test suite before pushing to main branch")
	c := mem(3, memory.Fact, "the staging server caches docker layers in /var/cache/stage")
	d := mem(4, memory.Fact, "the staging server caches docker layers in /var/cache/stage too")
	clusters, chunks := consolidate.Candidates([]memory.Memory{a, b, c, d}, byID(a, b, c, d), 0, 10000, now)
	if len(clusters) != 1 || len(chunks) != 1 {
		t.Fatalf("clusters %+v chunks %+v, want one cluster of the two facts", clusters, chunks)
	}
	if ids := clusters[0].IDs; len(ids) != 2 || ids[0] != 3 || ids[1] != 4 {
		t.Fatalf("cluster %v, want [3 4]", ids)
	}
}

// Structured lessons are never merged by similarity, nor news to a run:
// only a declared repeat or revise changes one.
func TestCandidatesSkipStructuredLessons(t *testing.T) {
	a := mem(1, memory.Lesson, "always run the full test suite before pushing to main")
	b := mem(2, memory.Lesson, "always run the full test suite before pushing to main branch")
	for _, m := range []*memory.Memory{&a, &b} {
		m.Scope = memory.LessonReflection
		m.Lesson = &memory.LessonFields{Problem: "pushed untested", Correction: m.Text}
	}
	clusters, _ := consolidate.Candidates([]memory.Memory{a, b}, byID(a, b), 0, 10000, now)
	if len(clusters) != 0 {
		t.Fatalf("clusters %+v, want none: structured lessons are not merged", clusters)
	}
	if n := consolidate.CountNew([]memory.Memory{a, b}, 0); n != 0 {
		t.Fatalf("CountNew = %d, want 0", n)
	}
	// The same two as free-text lessons from before the model still merge.
	a.Scope, a.Lesson, b.Scope, b.Lesson = "", nil, "", nil
	if clusters, _ := consolidate.Candidates([]memory.Memory{a, b}, byID(a, b), 0, 10000, now); len(clusters) != 1 {
		t.Fatalf("free-text lessons: clusters %+v, want one", clusters)
	}
}
