package workflows

import (
	"context"
	"fmt"
	"runtime"
)

// bookkeepingSlots is how many steps' starts and ends may be in the
// database at once: twice the CPUs, at least 4. Those transactions are
// short and touch the rows their siblings touch (a fan-in's buckets and
// step), so running more of them than the database can run side by side
// does not move steps faster: they queue on each other's row locks, and on
// Postgres each wait ends in a recheck of the row (EvalPlanQual), while
// every extra connection in use is one more backend to warm up. Measured
// with BenchmarkNoopJobs on 2 CPUs and 200 workers: up to a third less
// Postgres CPU per step than with all 20 of the pool's connections.
func bookkeepingSlots() int {
	return max(4, 2*runtime.GOMAXPROCS(0))
}

// slot waits for a bookkeeping slot, or for ctx to end, and returns its
// release.
func (r *Runner) slot(ctx context.Context) (func(), error) {
	select {
	case r.slots <- struct{}{}:
		return func() { <-r.slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("workflow step: waiting for a bookkeeping slot: %w", context.Cause(ctx))
	}
}
