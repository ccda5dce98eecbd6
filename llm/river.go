package llm

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// PauseSnooze is how long a job that met 402 waits before it is available
// again; its queue is paused by then, so it waits for `mull queues resume`.
const PauseSnooze = time.Minute

// JobResult maps what a worker's LLM work returned to what the worker must
// return to River, in one place:
//   - nil → nil;
//   - Budget → snooze until the key resets (no attempt burned);
//   - Retryable with Retry-After → snooze that long; otherwise the error,
//     retried with the kind's backoff;
//   - Invalid → the error while attempts remain, then cancel (dead letter);
//   - Permanent → cancel now, into the dead letters with the reason;
//   - Pause (402) → pause the job's queue (every LLM job on it waits for an
//     operator's `mull queues resume`), and snooze.
//
// Errors not from this package are returned as they are.
func JobResult(ctx context.Context, log *slog.Logger, job *rivertype.JobRow, err error) error {
	var e *Error
	if err == nil || !errors.As(err, &e) {
		return err
	}
	switch e.Class {
	case Budget:
		wait := time.Until(e.ResetAt)
		log.Info("llm budget exhausted; snoozing until reset", "job_id", job.ID, "kind", job.Kind, "reset_at", e.ResetAt, "error", err)
		return river.JobSnooze(max(wait, time.Second))
	case Retryable:
		if e.RetryAfter > 0 {
			log.Info("llm rate limited; snoozing for Retry-After", "job_id", job.ID, "retry_after", e.RetryAfter)
			return river.JobSnooze(e.RetryAfter)
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
		pauseQueue(ctx, log, job, err)
		return river.JobSnooze(PauseSnooze)
	}
	return err
}

func pauseQueue(ctx context.Context, log *slog.Logger, job *rivertype.JobRow, cause error) {
	client, cerr := river.ClientFromContextSafely[*sql.Tx](ctx)
	if cerr != nil {
		log.Error("llm balance exhausted (402) but no River client to pause the queue", "queue", job.Queue, "error", cerr)
		return
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := client.QueuePause(pctx, job.Queue, nil); err != nil {
		log.Error("pause queue after 402", "queue", job.Queue, "error", err)
		return
	}
	log.Error("DeepSeek balance exhausted (HTTP 402): queue paused; top up, then run `mull queues resume "+job.Queue+"`",
		"queue", job.Queue, "job_id", job.ID, "kind", job.Kind, "error", cause)
}
