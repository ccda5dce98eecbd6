package consolidate_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/consolidate"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestSeedTriggerNumbers pins the seed's sleep-time numbers as the default
// config applies them (sleepConsolidate; mull's after-N-sessions trigger):
// the 5th primary session end since the last run plans one, not the 4th,
// 5 minutes later; and a run is not planned again within 6 hours of the
// last one's start, though it is at 6 hours exactly.
func TestSeedTriggerNumbers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		s.SetClock(func() time.Time { return at })
		set := consolidate.SettingsFrom(config.Config{}.WithDefaults().Consolidate)
		e := setup(t, s, set)
		client := enginetest.NewClient(t, s, e.reg, e.cfg, false)
		hook := &consolidate.Hook{Store: s, Settings: set}
		end := func() {
			t.Helper()
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				return hook.SessionEnded(ctx, tx, client, store.Session{ID: "s", Workspace: ws, Primary: true})
			}); err != nil {
				t.Fatal(err)
			}
		}
		planners := func() []*rivertype.JobRow {
			t.Helper()
			res, err := client.JobList(ctx, river.NewJobListParams().Kinds("consolidate").First(100))
			if err != nil {
				t.Fatal(err)
			}
			return res.Jobs
		}
		clear := func(lastStarted time.Time) {
			t.Helper()
			if _, err := client.JobDeleteMany(ctx, river.NewJobDeleteManyParams().Kinds("consolidate")); err != nil {
				t.Fatal(err)
			}
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				st, err := s.LockConsolidateState(ctx, tx, ws)
				if err != nil {
					return err
				}
				st.LastStartedAt, st.SessionsSince = lastStarted, 10
				return s.PutConsolidateState(ctx, tx, st)
			}); err != nil {
				t.Fatal(err)
			}
		}

		for range 4 {
			end()
		}
		if n := len(planners()); n != 0 {
			t.Fatalf("%d planners after 4 sessions, want none before the 5th", n)
		}
		end()
		jobs := planners()
		if len(jobs) != 1 {
			t.Fatalf("%d planners after 5 sessions, want 1", len(jobs))
		}
		if d := jobs[0].ScheduledAt.Sub(at); d < 5*time.Minute-time.Second || d > 5*time.Minute+time.Second {
			t.Fatalf("planned %s after the 5th session end, want 5m", d)
		}

		clear(at.Add(-6*time.Hour + time.Second))
		end()
		if n := len(planners()); n != 0 {
			t.Fatalf("%d planners 6h less a second after the last run, want none", n)
		}
		clear(at.Add(-6 * time.Hour))
		end()
		if n := len(planners()); n != 1 {
			t.Fatalf("%d planners 6h after the last run, want 1", n)
		}
	})
}
