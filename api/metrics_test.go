package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// requireMetrics fails unless every line is in the exposition body.
func requireMetrics(t *testing.T, body string, lines ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(body, "\n") {
		have[l] = true
	}
	for _, l := range lines {
		if !have[l] {
			t.Errorf("metrics lack %q", l)
		}
	}
	if t.Failed() {
		t.Fatalf("metrics body:\n%s", grepMull(body))
	}
}

func grepMull(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "mull_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestMetrics(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, "")
		// Feed River's own events to Consume: subscribe before the jobs run,
		// then close the subscription once they are final. River hands an
		// event to every subscription under one lock, so the feed holds every
		// event f.events has delivered by then.
		feed, closeFeed := f.c.Subscribe(api.MetricEvents...)
		f.run("")       // completed
		f.dead()        // failed once, then discarded
		f.run("cancel") // cancelled with an error
		f.run("cutoff") // cancelled as a workflow step its run cut off: not dead
		closeFeed()
		f.srv.Metrics().Consume(feed)

		// Events River does not send here: a snooze, and one without a job.
		synthetic := make(chan *river.Event, 2)
		synthetic <- &river.Event{
			Kind:     river.EventKindJobSnoozed,
			Job:      &rivertype.JobRow{Kind: "synthetic", State: rivertype.JobStateScheduled},
			JobStats: &river.JobStatistics{RunDuration: 20 * time.Millisecond},
		}
		synthetic <- &river.Event{Kind: river.EventKindQueuePaused, Queue: &rivertype.Queue{Name: "default"}}
		close(synthetic)
		f.srv.Metrics().Consume(synthetic)

		// Without an admin token, metrics answer on loopback only (their
		// labels name workspaces and budget keys), as the admin API does.
		expect(t, f.do("GET", "/metrics", "", from("203.0.113.5:1234")), http.StatusForbidden, nil)
		rec := f.do("GET", "/metrics", "")
		expect(t, rec, http.StatusOK, nil)
		requireMetrics(t, rec.Body.String(),
			`mull_database_up 1`,
			`mull_jobs{kind="apitest",queue="default",state="completed"} 1`,
			`mull_jobs{kind="apitest",queue="default",state="discarded"} 1`,
			`mull_jobs{kind="apitest",queue="default",state="cancelled"} 2`,
			// The discarded job and the one cancelled with an error.
			`mull_dead_letters{kind="apitest"} 2`,
			`mull_job_attempts_total{kind="apitest",outcome="completed"} 1`,
			`mull_job_attempts_total{kind="apitest",outcome="failed"} 1`,
			`mull_job_attempts_total{kind="apitest",outcome="discarded"} 1`,
			`mull_job_attempts_total{kind="apitest",outcome="cancelled"} 2`,
			`mull_job_attempts_total{kind="synthetic",outcome="snoozed"} 1`,
			`mull_job_run_duration_seconds_count{kind="apitest",outcome="completed"} 1`,
			`mull_job_run_duration_seconds_count{kind="apitest",outcome="discarded"} 1`,
			`mull_job_run_duration_seconds_count{kind="synthetic",outcome="snoozed"} 1`,
			`mull_job_run_duration_seconds_sum{kind="synthetic",outcome="snoozed"} 0.02`,
		)
		if strings.Contains(rec.Body.String(), `outcome="retryable"`) || strings.Contains(rec.Body.String(), `outcome="available"`) {
			t.Fatalf("a retried attempt was counted by its new state:\n%s", grepMull(rec.Body.String()))
		}

		// The job counts are read at scrape time: a new dead letter shows at once.
		f.dead()
		rec = f.do("GET", "/metrics", "")
		expect(t, rec, http.StatusOK, nil)
		requireMetrics(t, rec.Body.String(),
			`mull_jobs{kind="apitest",queue="default",state="discarded"} 2`,
			`mull_dead_letters{kind="apitest"} 3`,
		)
	})
}

func TestMetricsDatabaseDown(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, "")
		other := storetest.New(t, s.Dialect)
		srv := f.server(other, "")
		other.Close()
		rec := serve(srv, "GET", "/metrics", "")
		expect(t, rec, http.StatusOK, nil)
		requireMetrics(t, rec.Body.String(), `mull_database_up 0`)
		if strings.Contains(rec.Body.String(), "mull_jobs{") {
			t.Fatalf("job counts reported with the database closed:\n%s", grepMull(rec.Body.String()))
		}
	})
}
