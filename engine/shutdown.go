package engine

import (
	"context"
	"log/slog"
	"time"
)

// Shutdown stops a working client: it stops fetching, lets running jobs
// finish for up to grace (cut short when skip receives), then cancels the
// rest: River hands each interrupted job back as available without using
// up its attempt, so another worker (or this one, restarted) runs it.
// It reports whether every running job finished within the grace period.
func Shutdown[T any](c *Client, grace time.Duration, skip <-chan T, log *slog.Logger) bool {
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	go func() {
		select {
		case <-skip:
			log.Warn("second signal: cancelling running jobs now")
			cancel()
		case <-graceCtx.Done():
		}
	}()
	if err := c.Stop(graceCtx); err == nil {
		return true
	}
	log.Warn("grace period over: cancelling running jobs; they go back to the queue")
	hardCtx, cancelHard := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancelHard()
	if err := c.StopAndCancel(hardCtx); err != nil {
		log.Error("workers did not stop", "error", err)
	}
	return false
}
