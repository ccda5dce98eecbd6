package llm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/llm"
)

// A Retry-After snooze is capped by the llm.max_retry_after of the client
// that made the error, above the 1h default as well as below it.
func TestJobResultCapsRetryAfterByTheClientsLimit(t *testing.T) {
	job := &rivertype.JobRow{ID: 1, Kind: "retro_session", Attempt: 1, MaxAttempts: 5, Metadata: []byte(`{}`)}
	for _, tt := range []struct {
		name              string
		retryAfter, limit time.Duration
		want              time.Duration
	}{
		{"the default 1h caps an error that says nothing", 3 * time.Hour, 0, time.Hour},
		{"a client's 6h cap lets a 3h Retry-After stand", 3 * time.Hour, 6 * time.Hour, 3 * time.Hour},
		{"a client's 30m cap holds", time.Hour, 30 * time.Minute, 30 * time.Minute},
	} {
		e := &llm.Error{Class: llm.Retryable, RetryAfter: tt.retryAfter, MaxRetryAfter: tt.limit}
		err := llm.JobResult(context.Background(), enginetest.Logger(), job, e)
		var snooze *rivertype.JobSnoozeError
		if !errors.As(err, &snooze) || snooze.Duration != tt.want {
			t.Errorf("%s: %v; want a snooze of %s", tt.name, err, tt.want)
		}
	}
}
