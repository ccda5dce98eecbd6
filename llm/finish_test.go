package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/llmprobe"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/llm/fakeds"
)

// Only finish_reason "stop" is an answer. The fake answers with a
// schema-valid JSON body each time, so a client that ignored the finish
// reason would return it as a success: these cases fail if the non-stop
// check goes. content_filter is permanent (the seed discards such output:
// the same input meets the same filter), insufficient_system_resource and
// length retry, and a reason mull never asked for (tool_calls) retries.
func TestFinishReasonsAreSortedLikeErrors(t *testing.T) {
	for _, tt := range []struct {
		finish, reason string
		class          llm.Class
		// river is what the job returns: a cancel into the dead letters,
		// or the error itself for River to retry.
		cancel bool
	}{
		{"content_filter", "finish_content_filter", llm.Permanent, true},
		{"insufficient_system_resource", "finish_insufficient_system_resource", llm.Retryable, false},
		{"length", "truncated", llm.Retryable, false},
		{"tool_calls", "finish_tool_calls", llm.Retryable, false},
	} {
		t.Run(tt.finish, func(t *testing.T) {
			script := &fakeds.Script{Rules: []fakeds.Rule{{Kind: "llm_probe", Response: &fakeds.Response{
				Content: `{"ok":true,"echo":"hi"}`, FinishReason: tt.finish}}}}
			c, fake, rec := setup(t, script, nil)
			_, _, err := llm.CompleteJSON[llmprobe.Output](context.Background(), c, probeCall("hi"))
			var e *llm.Error
			if !errors.As(err, &e) || e.Class != tt.class || e.Reason != tt.reason {
				t.Fatalf("finish_reason %s: err = %v; want class %s reason %s", tt.finish, err, tt.class, tt.reason)
			}
			if len(fake.Requests()) != 1 || len(rec.calls) != 1 || rec.calls[0].Outcome != string(tt.class) ||
				rec.calls[0].ErrorReason != tt.reason || !strings.Contains(rec.calls[0].Error, tt.finish) {
				t.Fatalf("record %+v; want outcome %s reason %s naming %s", rec.calls, tt.class, tt.reason, tt.finish)
			}
			job := &rivertype.JobRow{ID: 1, Kind: "llm_probe", Attempt: 1, MaxAttempts: 5, Metadata: []byte(`{}`)}
			got := llm.JobResult(context.Background(), enginetest.Logger(), job, err)
			var cancel *river.JobCancelError
			if errors.As(got, &cancel) != tt.cancel || got == nil || !strings.Contains(got.Error(), tt.finish) {
				t.Fatalf("JobResult = %v; want cancel=%t with the reason %s", got, tt.cancel, tt.finish)
			}
		})
	}
}

// content_filter is permanent even when the filtered answer is blank: the
// blank check must not turn it into a retry.
func TestContentFilterBlankIsPermanent(t *testing.T) {
	script := &fakeds.Script{Rules: []fakeds.Rule{{Response: &fakeds.Response{Content: " ", FinishReason: "content_filter"}}}}
	c, _, _ := setup(t, script, nil)
	_, err := c.Complete(context.Background(), probeCall("hi"))
	if llm.ClassOf(err) != llm.Permanent {
		t.Fatalf("err = %v; want permanent", err)
	}
}
