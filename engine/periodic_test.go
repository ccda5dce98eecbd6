package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/jobs/probe"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestMinGap(t *testing.T) {
	from := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	tests := map[string]time.Duration{
		"* * * * *":                 time.Minute,
		"*/5 * * * *":               5 * time.Minute,
		"0 3 * * *":                 24 * time.Hour,
		"0 3,4 * * *":               time.Hour,
		"@every 90s":                90 * time.Second,
		"CRON_TZ=Asia/Tokyo @daily": 24 * time.Hour,
	}
	for expr, want := range tests {
		s, err := config.ParseCron(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if got := engine.MinGap(s.Next, from); got != want {
			t.Errorf("MinGap(%q) = %s, want %s", expr, got, want)
		}
	}
}

// A leader change inside one period runs the cron constructor on the old and
// the new leader; the second insert must be skipped as a duplicate.
func TestCronTickEnqueuedOncePerPeriod(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		reg := engine.NewRegistry(nil)
		engine.Add(reg, probe.Spec, &probe.Worker{})
		client := enginetest.NewClient(t, s, reg, enginetest.Config(), false)
		entry := config.Cron{Name: "every-minute", Kind: "probe", Schedule: "* * * * *", Args: `{"note":"tick"}`}
		insert := func() *rivertype.JobInsertResult {
			args, opts := engine.CronInsert(entry, time.Minute)
			res, err := client.Insert(ctx, args, opts)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		first, second := insert(), insert()
		if first.UniqueSkippedAsDuplicate || !second.UniqueSkippedAsDuplicate || second.Job.ID != first.Job.ID {
			t.Fatalf("second insert in one period: skipped=%t id=%d; want skipped, id %d",
				second.UniqueSkippedAsDuplicate, second.Job.ID, first.Job.ID)
		}
		if first.Job.MaxAttempts != probe.Spec.MaxAttempts || len(first.Job.Tags) != 1 || first.Job.Tags[0] != "cron-every-minute" {
			t.Fatalf("cron job = attempts %d tags %v", first.Job.MaxAttempts, first.Job.Tags)
		}
		other := entry
		other.Args = `{"note":"other entry"}`
		args, opts := engine.CronInsert(other, time.Minute)
		res, err := client.Insert(ctx, args, opts)
		if err != nil || res.UniqueSkippedAsDuplicate {
			t.Fatalf("an entry with other args was deduplicated: %v", err)
		}
	})
}

// Two clients on one database, both with the same periodic job: only the
// elected leader enqueues, and the per-period unique key backs it up, so
// each period gets one job.
func TestTwoWorkersOneLeader(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		cfg := enginetest.Config()
		cfg.Cron = []config.Cron{{Name: "tick", Kind: "probe", Schedule: "@every 1s", Args: "{}", RunOnStart: true}}
		var events []<-chan *river.Event
		for range 2 {
			reg := engine.NewRegistry(nil)
			engine.Add(reg, probe.Spec, &probe.Worker{})
			c := enginetest.NewClient(t, s, reg, cfg, true)
			events = append(events, enginetest.Events(t, c))
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Stop(context.Background()) })
		}
		seen := map[int64]bool{}
		deadline := testwait.After(t)
		for len(seen) < 3 {
			select {
			case ev := <-events[0]:
				seen[ev.Job.ID] = true
			case ev := <-events[1]:
				seen[ev.Job.ID] = true
			case <-deadline:
				t.Fatalf("only %d periodic jobs completed", len(seen))
			}
		}
		client := enginetest.NewClient(t, s, engine.NewRegistry(nil), cfg, false)
		res, err := client.JobList(context.Background(), river.NewJobListParams().Kinds("probe").
			States(rivertype.JobStateCompleted).First(100))
		if err != nil {
			t.Fatal(err)
		}
		// River keys a periodic job's uniqueness by its scheduled_at (the
		// tick it was enqueued for) truncated to the period, so that is the
		// period to count by; created_at moves with the insert's delay
		// under load and two periods' jobs can share its second.
		perPeriod := map[time.Time]int{}
		for _, j := range res.Jobs {
			p := j.ScheduledAt.UTC().Truncate(time.Second)
			if perPeriod[p]++; perPeriod[p] > 1 {
				t.Fatalf("two periodic jobs scheduled in the period %s", p)
			}
		}
	})
}
