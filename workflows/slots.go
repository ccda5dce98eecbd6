package workflows

import (
	"context"
	"fmt"
	"runtime"
)

// bookkeepingSlots is how many steps' starts and ends may be in the
// database at once on Postgres: twice the CPUs, at least 4. Those
// transactions are short and touch the rows their siblings touch (a
// fan-in's buckets and step), so running more of them than the database
// can run side by side does not move steps faster: they queue on each
// other's row locks, each wait ends in a recheck of the row
// (EvalPlanQual), and every extra connection in use is one more backend to
// warm up. With 200 workers and a pool of 20 on 2 CPUs
// (BenchmarkNoopJobs/postgres/workflow), the bound about halved
// Postgres's CPU per step. The step function itself runs outside it.
func bookkeepingSlots() int {
	return max(4, 2*runtime.GOMAXPROCS(0))
}

// slot waits for a bookkeeping slot, or for ctx to end, and returns its
// release.
func (r *Runner) slot(ctx context.Context) (func(), error) {
	if r.slots == nil {
		return func() {}, nil
	}
	select {
	case r.slots <- struct{}{}:
		return func() { <-r.slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("workflow step: waiting for a bookkeeping slot: %w", context.Cause(ctx))
	}
}
