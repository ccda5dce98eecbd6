package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/jobs/llmprobe"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
)

// A DeepSeek that answers 429 forever with a Retry-After of ten years:
// each snooze lasts at most llm.max_retry_after, and after
// llm.max_snoozes of them the job is in the dead letters with the reason
// "rate-limited N times", its attempts untouched by the snoozes.
func TestEndless429DeadLetters(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience(t))
			defer cancel()
			url := migratedDB(t, ctx, dialect)
			fake := fakeds.New(fakeds.Options{Script: &fakeds.Script{Rules: []fakeds.Rule{
				{Fault: fakeds.FaultRateLimit, RetryAfter: 315360000},
			}}})
			srv := httptest.NewServer(fake)
			t.Cleanup(func() { fake.Close(); srv.Close() })
			t.Setenv("MULL_LLM_BASE_URL", srv.URL)
			t.Setenv("DEEPSEEK_API_KEY", "sk-test")
			t.Setenv("MULL_LLM_MAX_RETRY_AFTER", "1s")
			t.Setenv("MULL_LLM_MAX_SNOOZES", "3")
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")

			a := openWorking(t, ctx, url)
			defer stopWorking(t, a)
			events, stop := a.client.Subscribe(river.EventKindJobSnoozed, river.EventKindJobCancelled)
			defer stop()
			res, err := a.client.Insert(ctx, llmprobe.Args{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			snoozes := 0
			for done := false; !done; {
				select {
				case e := <-events:
					if e.Job == nil || e.Job.ID != res.Job.ID {
						continue
					}
					switch e.Kind {
					case river.EventKindJobSnoozed:
						snoozes++
						if wait := time.Until(e.Job.ScheduledAt); wait > 2*time.Second {
							t.Fatalf("snooze %d waits %s; llm.max_retry_after is 1s", snoozes, wait)
						}
						if e.Job.Attempt != 0 {
							t.Fatalf("snooze %d left attempt %d; snoozes use none", snoozes, e.Job.Attempt)
						}
					case river.EventKindJobCancelled:
						done = true
					}
				case <-ctx.Done():
					t.Fatalf("after %d snoozes the job was not dead-lettered: %v", snoozes, ctx.Err())
				}
			}
			job, err := a.client.JobGet(ctx, res.Job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if job.State != rivertype.JobStateCancelled || snoozes != 3 || llm.RateLimited(job) != 3 || len(job.Errors) == 0 {
				t.Fatalf("job %s after %d snoozes (recorded %d), errors %v", job.State, snoozes, llm.RateLimited(job), job.Errors)
			}
			if msg := job.Errors[len(job.Errors)-1].Error; !strings.Contains(msg, "rate-limited 3 times") {
				t.Fatalf("dead letter reason %q", msg)
			}
			if n := len(fake.Requests()); n != 4 {
				t.Fatalf("%d requests; want 4 (3 snoozed, the 4th gives up)", n)
			}
		})
	}
}
