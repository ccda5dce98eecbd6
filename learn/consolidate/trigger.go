package consolidate

import (
	"fmt"
	"slices"
	"time"

	"github.com/mullhq/mull/learn/memory"
)

// Due reports whether a workspace may start a run now that is not asked
// for by hand: none in flight (inFlight) and its cooldown, counted from
// the last run's start (zero: never ran), over.
func Due(lastStarted time.Time, inFlight bool, now time.Time, cooldown time.Duration) bool {
	if inFlight {
		return false
	}
	return lastStarted.IsZero() || !now.Before(lastStarted.Add(cooldown))
}

// Request is what a planner decides on, under its workspace's lock.
type Request struct {
	// Manual runs (asked for by hand) skip the cooldown and run even with
	// nothing new; DryRun plans without starting, cooldown or not.
	Manual, DryRun bool
	// InFlight is the workspace's run still running (RunID).
	InFlight bool
	RunID    string
	// LastStarted is when the workspace's last run started (zero: never).
	LastStarted time.Time
	Cooldown    time.Duration
	Now         time.Time
	// New counts the memories news to a run (CountNew) since Watermark.
	New       int
	Watermark int64
}

// Skip is why a planner starts no run for r, as the note it records
// ("skipped: …"), or "" when it plans one.
func Skip(r Request) string {
	if r.InFlight {
		return fmt.Sprintf("skipped: run %s is still in flight", r.RunID)
	}
	if !r.Manual && !r.DryRun && !r.LastStarted.IsZero() {
		if next := r.LastStarted.Add(r.Cooldown); r.Now.Before(next) {
			return fmt.Sprintf("skipped: cooldown until %s", next.Format(time.RFC3339))
		}
	}
	if r.New == 0 && !r.Manual {
		return fmt.Sprintf("skipped: nothing new since memory %d", r.Watermark)
	}
	return ""
}

// SessionsDue reports whether a primary session's end, the sessionsSince-th
// since the workspace's last run, triggers one (after is
// consolidate.after_sessions), given Due.
func SessionsDue(sessionsSince, after int, due bool) bool { return sessionsSince >= after && due }

// Candidates are the clusters a run would merge among a library's live
// memories ms (byID indexes them) newer than since, packed into chunks of
// at most chunkChars: what the planner starts a run with, and what
// `consolidate run --dry-run` shows. Derived memories are left out: the
// derive step replaces them as a set. So are structured lessons (Governed):
// the seed-000 model does no similarity merging (its limitation 5 is a
// choice), a lesson changes only by a declared repeat or revise through the
// precedent gate, and a merge would also drop its scope and fields.
func Candidates(ms []memory.Memory, byID map[int64]memory.Memory, since int64, chunkChars int, now time.Time) ([]Cluster, [][]Cluster) {
	base := slices.DeleteFunc(slices.Clone(ms), func(m memory.Memory) bool { return m.Kind.SleepTime() || Governed(m) })
	clusters := Clusters(base, since, now, ClusterOptions{})
	return clusters, Chunks(clusters, byID, chunkChars)
}

// CountNew counts the memories of ms newer than since that are news to a
// run: what consolidation wrote itself (merged and derived memories) is
// not, so a library whose only new rows are last night's output is not
// consolidated again.
func CountNew(ms []memory.Memory, since int64) int {
	n := 0
	for _, m := range ms {
		if m.ID > since && m.Origin != memory.OriginSleep && !Governed(m) {
			n++
		}
	}
	return n
}

// CountBase counts the live memories derived ones are drawn from: the
// derive step asks the model only when there are consolidate.min_memories.
func CountBase(ms []memory.Memory) int {
	n := 0
	for _, m := range ms {
		if !m.Kind.SleepTime() && !m.Quarantined && m.InvalidAt.IsZero() {
			n++
		}
	}
	return n
}

// Governed reports a structured lesson (seed 000: fields or a lesson
// scope), which consolidation never merges or counts as news. A free-text
// lesson from before the lesson model is consolidated as before.
func Governed(m memory.Memory) bool {
	return m.Kind.Structured() && (m.Lesson != nil || m.Scope != "")
}
