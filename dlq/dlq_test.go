package dlq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/dlq"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func list(t *testing.T, f *fixture, filter dlq.Filter) []dlq.Letter {
	t.Helper()
	letters, err := dlq.List(context.Background(), f.c, filter)
	if err != nil {
		t.Fatalf("List(%+v): %v", filter, err)
	}
	return letters
}

func idsOf(letters []dlq.Letter) []int64 {
	ids := make([]int64, 0, len(letters))
	for _, l := range letters {
		ids = append(ids, l.ID)
	}
	return ids
}

func requireIDs(t *testing.T, what string, got, want []int64) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: ids %v, want %v", what, got, want)
	}
}

func TestList(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		a := f.dead(failArgs{Mode: "fail", Note: "a"})
		b := f.dead(otherArgs{Fail: true})
		f.run(failArgs{}) // completed: never listed
		c := f.dead(failArgs{Mode: "fail", Note: "c"})

		all := list(t, f, dlq.Filter{})
		requireIDs(t, "all, newest first", idsOf(all), []int64{c.ID, b.ID, a.ID})
		l := all[0]
		if l.Kind != "dlqtest_fail" || l.Queue != "default" || l.State != "discarded" ||
			l.Attempts != 3 || l.MaxAttempts != 3 || l.LastError != "boom on attempt 3" {
			t.Fatalf("letter = %+v", l)
		}
		if l.DiedAt.IsZero() || l.CreatedAt.IsZero() || l.DiedAt.Before(l.CreatedAt) || l.DiedAt.Location() != time.UTC {
			t.Fatalf("letter times: created %v died %v", l.CreatedAt, l.DiedAt)
		}
		var args failArgs
		if err := json.Unmarshal(l.Args, &args); err != nil || args != (failArgs{Mode: "fail", Note: "c"}) {
			t.Fatalf("letter args = %s (%v)", l.Args, err)
		}
		if l.Errors != nil {
			t.Fatalf("List filled Errors: %+v", l.Errors)
		}
		if !all[1].DiedAt.Before(all[0].DiedAt) || !all[2].DiedAt.Before(all[1].DiedAt) {
			t.Fatalf("died times not newest first: %v %v %v", all[0].DiedAt, all[1].DiedAt, all[2].DiedAt)
		}

		requireIDs(t, "kind dlqtest_fail", idsOf(list(t, f, dlq.Filter{Kind: "dlqtest_fail"})), []int64{c.ID, a.ID})
		requireIDs(t, "kind dlqtest_other", idsOf(list(t, f, dlq.Filter{Kind: "dlqtest_other"})), []int64{b.ID})
		requireIDs(t, "unknown kind", idsOf(list(t, f, dlq.Filter{Kind: "nope"})), []int64{})

		// Since keeps jobs that died at or after it: b's own death time keeps b.
		requireIDs(t, "since b died", idsOf(list(t, f, dlq.Filter{Since: all[1].DiedAt})), []int64{c.ID, b.ID})
		requireIDs(t, "since just after b died",
			idsOf(list(t, f, dlq.Filter{Since: all[1].DiedAt.Add(time.Microsecond)})), []int64{c.ID})
		requireIDs(t, "since in the future", idsOf(list(t, f, dlq.Filter{Since: time.Now().Add(time.Hour)})), []int64{})
		requireIDs(t, "since with kind",
			idsOf(list(t, f, dlq.Filter{Kind: "dlqtest_fail", Since: all[1].DiedAt})), []int64{c.ID})

		requireIDs(t, "limit 2", idsOf(list(t, f, dlq.Filter{Limit: 2})), []int64{c.ID, b.ID})
		requireIDs(t, "limit 1 of a kind", idsOf(list(t, f, dlq.Filter{Kind: "dlqtest_fail", Limit: 1})), []int64{c.ID})
		requireIDs(t, "limit above count", idsOf(list(t, f, dlq.Filter{Limit: 10})), []int64{c.ID, b.ID, a.ID})
	})
}

func TestGet(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s)
		dead := f.dead(failArgs{Mode: "fail"})
		done := f.run(failArgs{})

		l, err := dlq.Get(ctx, f.c, dead.ID)
		if err != nil {
			t.Fatal(err)
		}
		if l.ID != dead.ID || l.State != "discarded" || l.LastError != "boom on attempt 3" {
			t.Fatalf("letter = %+v", l)
		}
		if len(l.Errors) != 3 {
			t.Fatalf("want 3 attempt errors, got %+v", l.Errors)
		}
		for i, e := range l.Errors {
			if e.Attempt != i+1 || e.Error != fmt.Sprintf("boom on attempt %d", i+1) || e.At.IsZero() {
				t.Fatalf("error %d = %+v", i, e)
			}
			if i > 0 && e.At.Before(l.Errors[i-1].At) {
				t.Fatalf("attempt errors out of order: %+v", l.Errors)
			}
		}

		if _, err := dlq.Get(ctx, f.c, dead.ID+1000); !errors.Is(err, dlq.ErrNoJob) {
			t.Fatalf("missing id: err = %v, want ErrNoJob", err)
		}
		l, err = dlq.Get(ctx, f.c, done.ID)
		if !errors.Is(err, dlq.ErrNotDead) || !strings.Contains(err.Error(), "completed") {
			t.Fatalf("completed job: err = %v, want ErrNotDead naming the state", err)
		}
		if l.ID != done.ID || l.State != "completed" {
			t.Fatalf("completed job letter = %+v", l)
		}
	})
}

func TestCancelledWithErrorIsADeadLetter(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s)
		failed := f.dead(failArgs{Mode: "cancel"})
		if failed.State != rivertype.JobStateCancelled || len(failed.Errors) != 1 {
			t.Fatalf("JobCancel(err) job ended %s with %d errors", failed.State, len(failed.Errors))
		}
		cut := f.dead(failArgs{Mode: "cutoff"})
		if cut.State != rivertype.JobStateCancelled || len(cut.Errors) != 1 {
			t.Fatalf("cut-off step ended %s with %d errors", cut.State, len(cut.Errors))
		}
		parked := f.parked()
		quiet, err := f.c.JobCancel(ctx, parked.ID)
		if err != nil {
			t.Fatal(err)
		}
		if quiet.State != rivertype.JobStateCancelled || len(quiet.Errors) != 0 {
			t.Fatalf("cancelled available job is %s with %d errors", quiet.State, len(quiet.Errors))
		}

		letters := list(t, f, dlq.Filter{})
		requireIDs(t, "dead letters", idsOf(letters), []int64{failed.ID})
		if letters[0].State != "cancelled" || !strings.HasSuffix(letters[0].LastError, "permanent failure on attempt 1") {
			t.Fatalf("letter = %+v", letters[0])
		}
		if l, err := dlq.Get(ctx, f.c, failed.ID); err != nil || len(l.Errors) != 1 {
			t.Fatalf("Get(cancelled with error) = %+v, %v", l, err)
		}
		if _, err := dlq.Get(ctx, f.c, quiet.ID); !errors.Is(err, dlq.ErrNotDead) {
			t.Fatalf("Get(cancelled without error): err = %v, want ErrNotDead", err)
		}
		if _, err := dlq.Get(ctx, f.c, cut.ID); !errors.Is(err, dlq.ErrNotDead) {
			t.Fatalf("Get(workflow step cut off by its run): err = %v, want ErrNotDead", err)
		}

		res, err := dlq.Retry(ctx, f.c, dlq.Selector{IDs: []int64{quiet.ID}}, false)
		if err != nil {
			t.Fatal(err)
		}
		want := []dlq.RetryResult{{ID: quiet.ID, Kind: "dlqtest_idle", Reason: "job is cancelled, not a dead letter"}}
		if !reflect.DeepEqual(res, want) {
			t.Fatalf("retry of a quiet cancel = %+v, want %+v", res, want)
		}
		f.requireUnchanged(quiet)

		// Retrying the failed cancel runs it again; it cancels itself again.
		res, err = dlq.Retry(ctx, f.c, dlq.Selector{All: true}, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].ID != failed.ID || !res[0].Retried {
			t.Fatalf("retry all = %+v, want only job %d retried", res, failed.ID)
		}
		again := f.waitFinal(failed.ID)
		if again.State != rivertype.JobStateCancelled || again.Attempt != 2 || len(again.Errors) != 2 {
			t.Fatalf("retried cancel ended %s attempt %d with %d errors", again.State, again.Attempt, len(again.Errors))
		}

		// Purge takes the dead one and leaves the quiet cancel.
		purged, err := dlq.Purge(ctx, f.c, 0, time.Now().Add(time.Hour), "", false)
		if err != nil {
			t.Fatal(err)
		}
		requireIDs(t, "purged", idsOf(purged), []int64{failed.ID})
		f.requireUnchanged(quiet)
	})
}

func TestRetry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s)
		a := f.dead(failArgs{Mode: "fail", Note: "a"})
		b := f.dead(failArgs{Mode: "fail", Note: "b"})
		o := f.dead(otherArgs{Fail: true})
		done := f.run(failArgs{})
		const missing = 987654321

		retry := func(sel dlq.Selector, dryRun bool) []dlq.RetryResult {
			t.Helper()
			res, err := dlq.Retry(ctx, f.c, sel, dryRun)
			if err != nil {
				t.Fatalf("Retry(%+v, dry=%v): %v", sel, dryRun, err)
			}
			return res
		}
		unchanged := func() {
			t.Helper()
			for _, row := range []*rivertype.JobRow{a, b, o, done} {
				f.requireUnchanged(row)
			}
		}

		// Dry runs report and change nothing.
		got := retry(dlq.Selector{IDs: []int64{a.ID, done.ID, missing}}, true)
		want := []dlq.RetryResult{
			{ID: a.ID, Kind: "dlqtest_fail", Retried: true},
			{ID: done.ID, Kind: "dlqtest_fail", Reason: "job is completed, not a dead letter"},
			{ID: missing, Reason: "no such job"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("dry retry by ids = %+v, want %+v", got, want)
		}
		got = retry(dlq.Selector{All: true}, true)
		want = []dlq.RetryResult{
			{ID: o.ID, Kind: "dlqtest_other", Retried: true},
			{ID: b.ID, Kind: "dlqtest_fail", Retried: true},
			{ID: a.ID, Kind: "dlqtest_fail", Retried: true},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("dry retry all = %+v, want %+v", got, want)
		}
		got = retry(dlq.Selector{Kind: "dlqtest_other"}, true)
		if !reflect.DeepEqual(got, want[:1]) {
			t.Fatalf("dry retry of a kind = %+v, want %+v", got, want[:1])
		}
		unchanged()
		requireIDs(t, "after dry runs", idsOf(list(t, f, dlq.Filter{})), []int64{o.ID, b.ID, a.ID})

		for _, sel := range []dlq.Selector{{}, {IDs: []int64{a.ID}, All: true}, {IDs: []int64{a.ID}, Kind: "dlqtest_fail"}} {
			var bad *dlq.SelectorError
			if _, err := dlq.Retry(ctx, f.c, sel, false); !errors.As(err, &bad) {
				t.Fatalf("Retry(%+v): err = %v, want a SelectorError", sel, err)
			}
		}
		unchanged()

		// Real retries: the workers are healed, so retried jobs complete.
		f.fail.healed.Store(true)
		f.other.healed.Store(true)
		got = retry(dlq.Selector{IDs: []int64{a.ID}}, false)
		if !reflect.DeepEqual(got, []dlq.RetryResult{{ID: a.ID, Kind: "dlqtest_fail", Retried: true}}) {
			t.Fatalf("retry by id = %+v", got)
		}
		if row := f.waitFinal(a.ID); row.State != rivertype.JobStateCompleted || row.Attempt != 4 || row.MaxAttempts != 4 {
			t.Fatalf("retried job ended %s attempt %d/%d; want completed 4/4", row.State, row.Attempt, row.MaxAttempts)
		}
		requireIDs(t, "after retrying a", idsOf(list(t, f, dlq.Filter{})), []int64{o.ID, b.ID})

		got = retry(dlq.Selector{Kind: "dlqtest_other"}, false)
		if len(got) != 1 || got[0].ID != o.ID || !got[0].Retried {
			t.Fatalf("retry by kind = %+v", got)
		}
		if row := f.waitFinal(o.ID); row.State != rivertype.JobStateCompleted {
			t.Fatalf("retried job %d ended %s", o.ID, row.State)
		}

		got = retry(dlq.Selector{All: true}, false)
		if len(got) != 1 || got[0].ID != b.ID || !got[0].Retried {
			t.Fatalf("retry all = %+v", got)
		}
		if row := f.waitFinal(b.ID); row.State != rivertype.JobStateCompleted {
			t.Fatalf("retried job %d ended %s", b.ID, row.State)
		}

		requireIDs(t, "after retrying all", idsOf(list(t, f, dlq.Filter{})), []int64{})
		if got := retry(dlq.Selector{All: true}, false); len(got) != 0 {
			t.Fatalf("retry all with no dead letters = %+v", got)
		}
		got = retry(dlq.Selector{IDs: []int64{a.ID}}, false)
		if !reflect.DeepEqual(got, []dlq.RetryResult{{ID: a.ID, Kind: "dlqtest_fail", Reason: "job is completed, not a dead letter"}}) {
			t.Fatalf("second retry of a = %+v", got)
		}
	})
}

func TestRetryBlockedByNewerUniqueJob(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s)
		dead := f.dead(uniqueArgs{Key: "k1", Fail: true})
		if len(dead.UniqueKey) == 0 {
			t.Fatal("unique job has no unique key")
		}
		// The dead job does not hold the key, so a duplicate goes in and runs.
		newer := f.run(uniqueArgs{Key: "k1"})
		if newer.State != rivertype.JobStateCompleted || newer.ID == dead.ID {
			t.Fatalf("duplicate %d ended %s", newer.ID, newer.State)
		}

		blocked := func(res []dlq.RetryResult, deadID, blocker int64, state string) {
			t.Helper()
			if len(res) != 1 {
				t.Fatalf("results = %+v, want one", res)
			}
			r := res[0]
			if r.ID != deadID || r.Kind != "dlqtest_unique" || r.Retried || r.BlockedBy != blocker ||
				!strings.Contains(r.Reason, fmt.Sprintf("job %d (%s)", blocker, state)) ||
				!strings.Contains(r.Reason, "unique key") {
				t.Fatalf("result = %+v; want not retried, blocked by %d (%s)", r, blocker, state)
			}
		}
		for _, dryRun := range []bool{true, false} {
			for _, sel := range []dlq.Selector{{IDs: []int64{dead.ID}}, {Kind: "dlqtest_unique"}, {All: true}} {
				res, err := dlq.Retry(ctx, f.c, sel, dryRun)
				if err != nil {
					t.Fatalf("Retry(%+v, dry=%v): %v", sel, dryRun, err)
				}
				blocked(res, dead.ID, newer.ID, "completed")
				f.requireUnchanged(dead)
				f.requireUnchanged(newer)
			}
		}

		// A live duplicate (scheduled for later) blocks as well.
		dead2 := f.dead(uniqueArgs{Key: "k2", Fail: true})
		later := f.insert(uniqueArgs{Key: "k2"}, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
		res, err := dlq.Retry(ctx, f.c, dlq.Selector{IDs: []int64{dead2.ID}}, false)
		if err != nil {
			t.Fatal(err)
		}
		blocked(res, dead2.ID, later.ID, "scheduled")
		f.requireUnchanged(dead2)

		// A duplicate in a state its own ByState leaves out does not hold the
		// key, and River retries the dead job without complaint.
		loose := &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled,
		}}}
		dead3 := enginetest.WaitFinal(t, f.events, f.insert(uniqueArgs{Key: "k3", Fail: true}, loose).ID)
		done3 := enginetest.WaitFinal(t, f.events, f.insert(uniqueArgs{Key: "k3"}, loose).ID)
		if dead3.State != rivertype.JobStateDiscarded || done3.State != rivertype.JobStateCompleted {
			t.Fatalf("loose unique jobs ended %s and %s", dead3.State, done3.State)
		}
		res, err = dlq.Retry(ctx, f.c, dlq.Selector{IDs: []int64{dead3.ID}}, false)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res, []dlq.RetryResult{{ID: dead3.ID, Kind: "dlqtest_unique", Retried: true}}) {
			t.Fatalf("retry beside a completed duplicate outside ByState = %+v", res)
		}
		if row := f.waitFinal(dead3.ID); row.State != rivertype.JobStateDiscarded || len(row.Errors) != 2 {
			t.Fatalf("retried loose unique job ended %s with %d errors", row.State, len(row.Errors))
		}

		// Once the newer job is gone, the dead one can be retried; it fails again.
		if _, err := f.c.JobDelete(ctx, newer.ID); err != nil {
			t.Fatal(err)
		}
		res, err = dlq.Retry(ctx, f.c, dlq.Selector{IDs: []int64{dead.ID}}, false)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res, []dlq.RetryResult{{ID: dead.ID, Kind: "dlqtest_unique", Retried: true}}) {
			t.Fatalf("retry after the blocker went = %+v", res)
		}
		if row := f.waitFinal(dead.ID); row.State != rivertype.JobStateDiscarded || len(row.Errors) != 2 {
			t.Fatalf("retried unique job ended %s with %d errors", row.State, len(row.Errors))
		}
	})
}

func TestPurge(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s)
		old := f.dead(failArgs{Mode: "fail"})
		young := f.dead(otherArgs{Fail: true})
		done := f.run(failArgs{})
		parked := f.parked()
		live := []*rivertype.JobRow{done, parked}

		letters := list(t, f, dlq.Filter{})
		requireIDs(t, "dead letters", idsOf(letters), []int64{young.ID, old.ID})
		youngDied := letters[0].DiedAt
		atYoung := youngDied.Add(time.Hour) // cutoff for "older than 1h" is young's death
		muchLater := time.Now().Add(48 * time.Hour)

		purge := func(olderThan time.Duration, now time.Time, kind string, dryRun bool) []int64 {
			t.Helper()
			got, err := dlq.Purge(ctx, f.c, olderThan, now, kind, dryRun)
			if err != nil {
				t.Fatalf("Purge(%s, %v, %q, dry=%v): %v", olderThan, now, kind, dryRun, err)
			}
			return idsOf(got)
		}

		requireIDs(t, "nothing an hour old yet", purge(time.Hour, time.Now(), "", false), []int64{})
		requireIDs(t, "dry run, cutoff at young's death", purge(time.Hour, atYoung, "", true), []int64{old.ID})
		requireIDs(t, "dry run, everything", purge(time.Hour, muchLater, "", true), []int64{young.ID, old.ID})
		requireIDs(t, "dry run, one kind", purge(time.Hour, muchLater, "dlqtest_other", true), []int64{young.ID})
		// The preview keeps the first max letters and counts them all.
		for _, c := range []struct {
			max, n int
			want   []int64
		}{{1, 2, []int64{young.ID}}, {5, 2, []int64{young.ID, old.ID}}, {0, 2, []int64{}}} {
			got, n, err := dlq.PurgePreview(ctx, f.c, time.Hour, muchLater, "", c.max)
			if err != nil || n != c.n {
				t.Fatalf("PurgePreview(max %d): %d letters, err %v; want %d", c.max, n, err, c.n)
			}
			requireIDs(t, fmt.Sprintf("preview of at most %d", c.max), idsOf(got), c.want)
		}
		if got, n, err := dlq.PurgePreview(ctx, f.c, time.Hour, atYoung, "", 100); err != nil || n != 1 || len(got) != 1 || got[0].ID != old.ID {
			t.Fatalf("preview, cutoff at young's death: %v, %d, %v", idsOf(got), n, err)
		}
		if _, _, err := dlq.PurgePreview(ctx, f.c, -time.Second, time.Now(), "", 100); err == nil {
			t.Fatal("PurgePreview accepted a negative older-than")
		}
		requireIDs(t, "after dry runs", idsOf(list(t, f, dlq.Filter{})), []int64{young.ID, old.ID})
		f.requireUnchanged(old)
		f.requireUnchanged(young)

		requireIDs(t, "purge, cutoff at young's death", purge(time.Hour, atYoung, "", false), []int64{old.ID})
		if _, err := f.c.JobGet(ctx, old.ID); !errors.Is(err, river.ErrNotFound) {
			t.Fatalf("purged job %d: JobGet err = %v, want not found", old.ID, err)
		}
		f.requireUnchanged(young)

		requireIDs(t, "purge the rest", purge(time.Hour, muchLater, "", false), []int64{young.ID})
		requireIDs(t, "after purging", idsOf(list(t, f, dlq.Filter{})), []int64{})
		requireIDs(t, "purge again", purge(0, muchLater, "", false), []int64{})
		for _, row := range live {
			f.requireUnchanged(row)
		}

		if _, err := dlq.Purge(ctx, f.c, -time.Second, time.Now(), "", true); err == nil {
			t.Fatal("Purge accepted a negative older-than")
		}
	})
}

func TestParseSince(t *testing.T) {
	now := time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2025-06-01T08:30:00Z", time.Date(2025, 6, 1, 8, 30, 0, 0, time.UTC)},
		{"2025-06-01T08:30:00.25+02:00", time.Date(2025, 6, 1, 6, 30, 0, 250_000_000, time.UTC)},
		{"24h", now.Add(-24 * time.Hour)},
		{"7d", now.Add(-7 * 24 * time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
	} {
		got, err := dlq.ParseSince(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "2025-06-01", "7x"} {
		if _, err := dlq.ParseSince(bad, now); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
			t.Errorf("ParseSince(%q): err = %v, want a hint", bad, err)
		}
	}
}

// TestManyDeadLetters crosses the 500-row pages List and Purge read in, and
// the 100 rows River's JobDeleteMany deletes unless told otherwise. (With
// -race, modernc SQLite makes every query slow: keep n small.)
func TestManyDeadLetters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s)
		const n = 510
		events, cancel := f.c.SubscribeConfig(&river.SubscribeConfig{ChanSize: 2 * n, Kinds: []river.EventKind{river.EventKindJobFailed}})
		defer cancel()
		params := make([]river.InsertManyParams, n)
		for i := range params {
			params[i] = river.InsertManyParams{Args: otherArgs{Fail: true}}
		}
		inserted, err := f.c.InsertMany(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]bool{}
		for _, r := range inserted {
			want[r.Job.ID] = true
		}
		deadline := testwait.After(t)
		for died := map[int64]bool{}; len(died) < n; {
			select {
			case ev := <-events:
				if ev.Job.State == rivertype.JobStateDiscarded && want[ev.Job.ID] {
					died[ev.Job.ID] = true
				}
			case <-deadline:
				t.Fatalf("only %d of %d jobs died in time", len(died), n)
			}
		}

		requireOrdered := func(what string, letters []dlq.Letter, size int) {
			t.Helper()
			if len(letters) != size {
				t.Fatalf("%s: %d letters, want %d", what, len(letters), size)
			}
			seen := map[int64]bool{}
			for i, l := range letters {
				if seen[l.ID] || !want[l.ID] {
					t.Fatalf("%s: letter %d (id %d) repeated or unknown", what, i, l.ID)
				}
				seen[l.ID] = true
				if i > 0 && l.DiedAt.After(letters[i-1].DiedAt) {
					t.Fatalf("%s: letter %d died after letter %d", what, i, i-1)
				}
			}
		}
		all := list(t, f, dlq.Filter{})
		requireOrdered("all", all, n)
		requireIDs(t, "limit 505 is a prefix", idsOf(list(t, f, dlq.Filter{Limit: 505})), idsOf(all[:505]))

		dry, err := dlq.Purge(ctx, f.c, time.Hour, time.Now().Add(48*time.Hour), "", true)
		if err != nil {
			t.Fatal(err)
		}
		requireOrdered("dry purge", dry, n)
		requireOrdered("after dry purge", list(t, f, dlq.Filter{}), n)
		purged, err := dlq.Purge(ctx, f.c, time.Hour, time.Now().Add(48*time.Hour), "", false)
		if err != nil {
			t.Fatal(err)
		}
		requireOrdered("purged", purged, n)
		requireIDs(t, "after purging", idsOf(list(t, f, dlq.Filter{})), []int64{})
	})
}
