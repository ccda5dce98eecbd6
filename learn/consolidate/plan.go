package consolidate

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/mullhq/mull/learn/memory"
)

// InvalidReason is the reason a merged (superseded) memory carries.
const InvalidReason = "merged by consolidate"

// MergeChanges is what applying one chunk's answer does to the library,
// decided here and written by the job in one transaction.
type MergeChanges struct {
	// Merged are the accepted merges, in cluster order.
	Merged []Merged
	// Rejected are the merges refused, for the job's log; their clusters
	// stay as they are.
	Rejected []RejectedMerge
	// Quarantined are the rejected merges the trust gate quarantined, as
	// it stored them (redacted): the job keeps them in the quarantine
	// table, never served.
	Quarantined []memory.Memory
}

// Merged is one accepted merge: a new memory that replaces its cluster.
type Merged struct {
	// Redacted counts the credentials the trust gate redacted in New.
	Redacted int
	// New is built by memory.New with origin sleep and the cluster's
	// kind, not stored yet (ID 0).
	New memory.Memory
	// Supersedes are the cluster's member IDs, to be invalidated with
	// InvalidReason and SupersededBy set to New's ID once it is stored.
	Supersedes []int64
}

// RejectedMerge is a merge that PlanMerges refused: the cluster, the text
// the model proposed, and why: what it lacks (Missing), or Err.
type RejectedMerge struct {
	Cluster Cluster
	Text    string
	Missing []string
	Err     error
}

// PlanMerges decides, for one chunk and its answer (which has passed
// Validate), what to write. byID holds the chunk's members as stored. A
// merge is accepted only when its line is a valid memory (memory.New), is
// not quarantined (a good memory is never replaced by a hidden one), and
// keeps every source's key content and enough of its words (Missing). The
// new memory inherits, never raises, its sources' standing: the highest
// importance, src user only when every source is src user (otherwise the
// first other source's src, so trust is not laundered upward), the sum of
// their uses, the latest verification (so a merge does not make stale
// facts fresh), no session, and the job's ID. It is pure: byID is not
// modified.
func PlanMerges(o MergeOutput, chunk []Cluster, byID map[int64]memory.Memory, src Source, now time.Time) MergeChanges {
	var c MergeChanges
	merges := slices.Clone(o.Merges)
	slices.SortStableFunc(merges, func(a, b Merge) int { return cmp.Compare(a.Cluster, b.Cluster) })
	taken := map[int64]bool{}
	for _, mg := range merges {
		if mg.Cluster < 1 || mg.Cluster > len(chunk) {
			continue
		}
		cl := chunk[mg.Cluster-1]
		m, missing, redacted, err := planMerge(mg.Text, cl, byID, taken, src, now)
		if m.Quarantined {
			c.Quarantined = append(c.Quarantined, m)
		}
		if err != nil || len(missing) > 0 {
			c.Rejected = append(c.Rejected, RejectedMerge{Cluster: cl, Text: mg.Text, Missing: missing, Err: err})
			continue
		}
		for _, id := range cl.IDs {
			taken[id] = true
		}
		c.Merged = append(c.Merged, Merged{New: m, Supersedes: slices.Clone(cl.IDs), Redacted: redacted})
	}
	return c
}

func planMerge(text string, cl Cluster, byID map[int64]memory.Memory, taken map[int64]bool, src Source, now time.Time) (memory.Memory, []string, int, error) {
	var sources []memory.Memory
	for _, id := range cl.IDs {
		s, ok := byID[id]
		switch {
		case !ok:
			return memory.Memory{}, nil, 0, fmt.Errorf("cluster: memory %d is not in the chunk", id)
		case taken[id]:
			return memory.Memory{}, nil, 0, fmt.Errorf("cluster: memory %d is already merged in this chunk", id)
		case s.Kind != cl.Kind:
			return memory.Memory{}, nil, 0, fmt.Errorf("cluster: memory %d is a %s, not a %s", id, s.Kind, cl.Kind)
		}
		sources = append(sources, s)
	}
	if err := checkItem("text", text, MaxMergeRunes); err != nil {
		return memory.Memory{}, nil, 0, err
	}
	w := memory.Write{Workspace: src.Workspace, Kind: cl.Kind, Text: text,
		Importance: importance(sources), Src: trust(sources)}
	m, redacted, err := memory.New(w, memory.Provenance{Origin: memory.OriginSleep, JobID: src.JobID}, now)
	switch {
	case err != nil:
		return memory.Memory{}, nil, 0, err
	case m.Quarantined:
		return m, nil, 0, &memory.FieldError{Field: "text", Problem: "quarantined (" + m.QuarantineReason + ")"}
	}
	if missing := Missing(m.Text, sources); len(missing) > 0 {
		return memory.Memory{}, missing, 0, nil
	}
	for _, s := range sources {
		m.Uses += max(s.Uses, 0)
		m.VerifiedAt, m.VerifiedBy = freshest(m.VerifiedAt, m.VerifiedBy, s)
	}
	return m, nil, redacted, nil
}

// freshest is the later of a merge's verified time so far (at, by) and
// source s's: s's verification with its verifier, or, when s was never
// verified, its record time, which no one verified (VerifiedByMerge).
func freshest(at time.Time, by string, s memory.Memory) (time.Time, string) {
	sAt, sBy := s.VerifiedAt, s.VerifiedBy
	if sAt.IsZero() {
		sAt, sBy = s.RecordedAt, memory.VerifiedByMerge
	}
	if sAt.After(at) {
		return sAt.UTC(), sBy
	}
	return at, by
}

// importance is the highest stored importance of the sources, a 0 counting
// as its kind's default so that a merge never lowers it; 0 when every
// source has the default.
func importance(sources []memory.Memory) int {
	best, set := 0, false
	for _, s := range sources {
		set = set || s.Importance != 0
		best = max(best, cmp.Or(s.Importance, s.Kind.DefaultImportance()))
	}
	if !set {
		return 0
	}
	return best
}

// trust is the merged memory's src: user only when every source is user.
func trust(sources []memory.Memory) memory.Src {
	for _, s := range sources {
		if s.Src != memory.SrcUser {
			return s.Src
		}
	}
	return memory.SrcUser
}
