package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/config"
)

// Periodic turns the config's cron entries into River periodic jobs. Every
// worker registers them and only the elected leader enqueues; each insert is
// unique per kind, args and schedule period, so a leader change inside one
// period cannot enqueue the same tick twice.
func Periodic(entries []config.Cron, reg *Registry) ([]*river.PeriodicJob, error) {
	var out []*river.PeriodicJob
	for i, e := range entries {
		key := fmt.Sprintf("cron[%d]", i)
		if _, ok := reg.Spec(e.Kind); !ok {
			return nil, &config.Error{Key: key + ".kind", Problem: fmt.Sprintf("no job kind %q (known: %v)", e.Kind, reg.kinds())}
		}
		sched, err := config.ParseCron(e.Schedule)
		if err != nil {
			return nil, &config.Error{Key: key + ".schedule", Problem: err.Error()}
		}
		period := MinGap(sched.Next, time.Now())
		e := e
		out = append(out, river.NewPeriodicJob(sched, func() (river.JobArgs, *river.InsertOpts) {
			return CronInsert(e, period)
		}, &river.PeriodicJobOpts{ID: e.Name, RunOnStart: e.RunOnStart}))
	}
	return out, nil
}

// CronInsert is what a cron entry inserts at each tick: its kind and args,
// unique by args within one schedule period.
func CronInsert(e config.Cron, period time.Duration) (river.JobArgs, *river.InsertOpts) {
	return rawArgs{kind: e.Kind, args: json.RawMessage(e.Args)}, &river.InsertOpts{
		Tags:       []string{"cron-" + e.Name},
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByPeriod: period},
	}
}

// MinGap is the smallest gap between consecutive ticks of a schedule over its
// next 500 ticks (at most a year ahead), rounded down to a whole second. It
// is the unique period that keeps one job per tick.
func MinGap(next func(time.Time) time.Time, from time.Time) time.Duration {
	gap := time.Duration(0)
	t := next(from)
	for range 500 {
		n := next(t)
		if n.IsZero() || n.Sub(from) > 366*24*time.Hour {
			break
		}
		if d := n.Sub(t); gap == 0 || d < gap {
			gap = d
		}
		t = n
	}
	return max(gap.Truncate(time.Second), time.Second)
}
