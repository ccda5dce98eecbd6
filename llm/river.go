package llm

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// PauseSnooze is how long a job that met 402 waits before it is available
// again; its queue is paused by then, so it waits for `mull queues resume`.
const PauseSnooze = time.Minute

// NoKeyReason is why a queue mull paused at start waits: there is no API
// key, and a call without one would only burn attempts on 401s.
const NoKeyReason = "no DEEPSEEK_API_KEY"

// BalanceReason is why a queue paused on a 402 waits.
const BalanceReason = "DeepSeek balance exhausted (HTTP 402)"

// PausedReasonKey is the River queue metadata key holding why mull paused
// the queue (NoKeyReason, or the 402's).
const PausedReasonKey = "paused_reason"

// Snoozes are how a job rate-limited (429) is bounded: Retry-After is
// capped at MaxRetryAfter, and after Max rate-limit snoozes the job goes to
// the dead letters.
type Snoozes struct {
	MaxRetryAfter time.Duration
	Max           int
}

// DefaultSnoozes are llm.max_retry_after's and llm.max_snoozes' defaults.
var DefaultSnoozes = Snoozes{MaxRetryAfter: time.Hour, Max: 12}

// RateLimitedKey is the key of the job output (River's metadata "output")
// counting the job's rate-limit snoozes. River counts every snooze in its
// metadata "snoozes", budget waits and 402 pauses too; only 429s count here.
const RateLimitedKey = "rate_limited"

// JobResult maps what a worker's LLM work returned to what the worker must
// return to River, with DefaultSnoozes; see JobResultWith.
func JobResult(ctx context.Context, log *slog.Logger, job *rivertype.JobRow, err error) error {
	return JobResultWith(ctx, log, job, err, DefaultSnoozes)
}

// JobResultWith maps what a worker's LLM work returned to what the worker
// must return to River, in one place:
//   - nil → nil;
//   - Budget → snooze until the key resets (no attempt burned);
//   - Retryable with Retry-After → snooze that long, at most
//     s.MaxRetryAfter (the client caps it at llm.max_retry_after already);
//     a job snoozed s.Max times so (the error's MaxSnoozes wins) is
//     cancelled at the next one instead: dead letter "rate-limited N
//     times"; without Retry-After the error, retried with the kind's
//     backoff;
//   - Invalid → the error while attempts remain, then cancel (dead letter);
//   - Permanent → cancel now, into the dead letters with the reason;
//   - Pause (402, or no API key) → pause the job's queue (every LLM job on
//     it waits for an operator's `mull queues resume`, or a restart with a
//     key), and snooze.
//
// Errors not from this package are returned as they are.
func JobResultWith(ctx context.Context, log *slog.Logger, job *rivertype.JobRow, err error, s Snoozes) error {
	var e *Error
	if err == nil || !errors.As(err, &e) {
		return err
	}
	s.MaxRetryAfter = cmp.Or(s.MaxRetryAfter, DefaultSnoozes.MaxRetryAfter)
	s.Max = cmp.Or(s.Max, DefaultSnoozes.Max)
	switch e.Class {
	case Budget:
		wait := time.Until(e.ResetAt)
		log.Info("llm budget exhausted; snoozing until reset", "job_id", job.ID, "kind", job.Kind, "reset_at", e.ResetAt, "error", err)
		return river.JobSnooze(max(wait, time.Second))
	case Retryable:
		if e.RetryAfter > 0 {
			if e.MaxSnoozes > 0 {
				s.Max = e.MaxSnoozes
			}
			if e.MaxRetryAfter > 0 {
				s.MaxRetryAfter = e.MaxRetryAfter
			}
			done := RateLimited(job)
			if done >= s.Max {
				log.Warn("llm rate limited too often; into the dead letters", "job_id", job.ID, "kind", job.Kind, "snoozes", done)
				return river.JobCancel(fmt.Errorf("rate-limited %d times (llm.max_snoozes), again: %w", done, err))
			}
			n := done + 1
			wait := min(e.RetryAfter, s.MaxRetryAfter)
			if rerr := river.RecordOutput(ctx, map[string]int{RateLimitedKey: n}); rerr != nil {
				log.Error("record a rate-limit snooze", "job_id", job.ID, "error", rerr)
			}
			log.Info("llm rate limited; snoozing for Retry-After", "job_id", job.ID, "retry_after", e.RetryAfter,
				"snooze", wait, "times", n, "max_snoozes", s.Max)
			return river.JobSnooze(wait)
		}
		return err
	case Invalid:
		if job.Attempt >= job.MaxAttempts {
			return river.JobCancel(err)
		}
		return err
	case Permanent:
		return river.JobCancel(err)
	case Pause:
		pauseQueue(ctx, log, job, e)
		return river.JobSnooze(PauseSnooze)
	}
	return err
}

// RateLimited is how many times a job was snoozed for a rate limit, from
// the output JobResultWith records.
func RateLimited(job *rivertype.JobRow) int {
	var m struct {
		Output map[string]json.RawMessage `json:"output"`
	}
	if json.Unmarshal(job.Metadata, &m) != nil {
		return 0
	}
	var n int
	_ = json.Unmarshal(m.Output[RateLimitedKey], &n)
	return n
}

func pauseQueue(ctx context.Context, log *slog.Logger, job *rivertype.JobRow, cause *Error) {
	client, cerr := river.ClientFromContextSafely[*sql.Tx](ctx)
	if cerr != nil {
		log.Error("llm queue must pause but no River client to pause it", "queue", job.Queue, "error", cerr)
		return
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	reason := BalanceReason
	if cause.Reason == ReasonNoKey {
		reason = NoKeyReason
	}
	if err := pause(pctx, client, job.Queue, reason); err != nil {
		log.Error("pause queue", "queue", job.Queue, "reason", reason, "error", err)
		return
	}
	if cause.Reason == ReasonNoKey {
		log.Warn("no DEEPSEEK_API_KEY: queue paused, no attempt used; set the key, then restart or run `mull queues resume "+job.Queue+"`",
			"queue", job.Queue, "job_id", job.ID, "kind", job.Kind)
		return
	}
	log.Error("DeepSeek balance exhausted (HTTP 402): queue paused; top up, then run `mull queues resume "+job.Queue+"`",
		"queue", job.Queue, "job_id", job.ID, "kind", job.Kind, "error", cause)
}

// PauseQueue pauses queue for reason, outside a job: the LLM proxy met a
// 402 for a benchmark cell's DSH, and every LLM job must wait as they do
// when one of them meets it.
func PauseQueue(ctx context.Context, client *river.Client[*sql.Tx], queue, reason string) error {
	return pause(ctx, client, queue, reason)
}

func pause(ctx context.Context, client *river.Client[*sql.Tx], queue, reason string) error {
	if err := client.QueuePause(ctx, queue, nil); err != nil {
		return err
	}
	md, _ := json.Marshal(map[string]string{PausedReasonKey: reason})
	_, err := client.QueueUpdate(ctx, queue, &river.QueueUpdateParams{Metadata: md})
	return err
}

// PauseWithoutKey pauses queues before the client starts working them, so
// no LLM job is even fetched while there is no API key: their jobs wait at
// the attempt they are at. A queue River has not seen yet is created
// paused. The reason (NoKeyReason) is in the queue's metadata, where
// ResumeWithKey and /healthz find it.
func PauseWithoutKey(ctx context.Context, client *river.Client[*sql.Tx], drv riverdriver.Driver[*sql.Tx], queues []string, now time.Time) error {
	md, _ := json.Marshal(map[string]string{PausedReasonKey: NoKeyReason})
	for _, q := range queues {
		if _, err := drv.GetExecutor().QueueCreateOrSetUpdatedAt(ctx, &riverdriver.QueueCreateOrSetUpdatedAtParams{
			Metadata: md, Name: q, Now: &now, PausedAt: &now, UpdatedAt: &now,
		}); err != nil {
			return fmt.Errorf("create queue %s paused: %w", q, err)
		}
		if err := pause(ctx, client, q, NoKeyReason); err != nil {
			return fmt.Errorf("pause queue %s: %w", q, err)
		}
	}
	return nil
}

// ResumeWithKey resumes the queues PauseWithoutKey paused, now that there
// is a key: what waited runs. A queue paused for another reason (a 402, an
// operator) stays paused. It returns the queues it resumed.
func ResumeWithKey(ctx context.Context, client *river.Client[*sql.Tx], queues []string) ([]string, error) {
	var resumed []string
	for _, q := range queues {
		queue, err := client.QueueGet(ctx, q)
		if errors.Is(err, rivertype.ErrNotFound) {
			continue
		}
		if err != nil {
			return resumed, fmt.Errorf("read queue %s: %w", q, err)
		}
		if queue.PausedAt == nil || PausedReason(queue) != NoKeyReason {
			continue
		}
		if err := client.QueueResume(ctx, q, nil); err != nil {
			return resumed, fmt.Errorf("resume queue %s: %w", q, err)
		}
		md, _ := json.Marshal(map[string]string{PausedReasonKey: ""})
		if _, err := client.QueueUpdate(ctx, q, &river.QueueUpdateParams{Metadata: md}); err != nil {
			return resumed, fmt.Errorf("clear queue %s's pause reason: %w", q, err)
		}
		resumed = append(resumed, q)
	}
	return resumed, nil
}

// PausedReason is why mull paused a queue, "" when it did not say.
func PausedReason(q *rivertype.Queue) string {
	var m map[string]any
	if json.Unmarshal(q.Metadata, &m) != nil {
		return ""
	}
	s, _ := m[PausedReasonKey].(string)
	return s
}
