// Package consolidate holds the pure rules of mull's sleep-time
// consolidation, the consolidate job: finding near-duplicate memories
// without comparing every pair, packing them into chunks for the model,
// the merge and derive prompts' fixed parts, the outputs they must return
// and how those are checked, and the plan of changes that applying them
// makes, and when a workspace is due a run (Due, Skip, SessionsDue) and
// what a run starts from (Candidates, CountNew, CountBase). The seed (002) rewrote whole memory files during sleep and guarded
// compaction with a fidelity rule; mull merges one cluster at a time and
// guards each merge with KeyContent and Missing, so a merge that drops a
// number, path, flag or identifier is refused. The derived sections keep
// the seed's counts: PRINCIPLES 3–6, HYPOTHESES 1–3, PREFETCH 3–5 within
// 800 characters. No SQL, no River, no HTTP here: the job writes the
// changes in one transaction.
package consolidate

import (
	"fmt"
	"time"

	"github.com/mullhq/mull/learn/memory"
)

// Source is where an answer came from: the workspace consolidated, the
// workflow run, and the job that asked. Every new memory carries it.
type Source struct {
	Workspace string
	RunID     string
	JobID     int64
}

func bad(field, format string, args ...any) error {
	return &memory.FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// live reports a memory that still counts: valid now and not quarantined.
func live(m memory.Memory, now time.Time) bool { return m.ValidAt(now) && !m.Quarantined }
