package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Class says what a failed call means for the job that made it. Errors are
// sorted once, here, and mapped to River in one place (JobResult).
type Class string

const (
	// Retryable: 429, 500, 503, timeouts, resets, blank, invalid or
	// truncated output, finish_reason insufficient_system_resource. River retries with the kind's backoff, or snoozes
	// for Retry-After.
	Retryable Class = "retryable"
	// Permanent: 400, 401, 422, finish_reason content_filter. The job is cancelled into the dead letters
	// with the reason; retrying cannot help.
	Permanent Class = "permanent"
	// Pause: 402 insufficient balance, or no API key (ReasonNoKey). The
	// LLM queues are paused until an operator resumes them; the job waits
	// without burning an attempt.
	Pause Class = "pause"
	// Budget: a daily budget key has no room. The job is snoozed until the
	// key resets.
	Budget Class = "budget"
	// Invalid: the model's output failed its schema. Retried while the job
	// has attempts left, then permanent.
	Invalid Class = "invalid"
)

// ReasonNoKey is the Reason of the Pause error a client without an API key
// returns instead of sending a request.
const ReasonNoKey = "no_key"

// Error is every error the client returns.
type Error struct {
	Class Class
	// Reason is a short stable word for metrics and call records:
	// http_429, http_500, timeout, connection, blank, truncated,
	// invalid_json, schema, budget, http_402 …
	Reason string
	// Status is the HTTP status, when there was one.
	Status int
	// RetryAfter is the server's Retry-After, when given, capped at
	// llm.max_retry_after.
	RetryAfter time.Duration
	// MaxSnoozes is llm.max_snoozes of the client that made the error:
	// how many Retry-After snoozes a job may take (JobResultWith).
	MaxSnoozes int
	// MaxRetryAfter is llm.max_retry_after of the client that made the
	// error, the cap RetryAfter already obeys; JobResultWith caps with it
	// rather than with its own default, so a longer configured cap holds.
	MaxRetryAfter time.Duration
	// ResetAt is when a Budget error's key resets.
	ResetAt time.Time
	Err     error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("llm %s (%s)", e.Class, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns an error's class, Retryable for errors this package did
// not make.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return Retryable
}

func newErr(c Class, reason string, err error) *Error {
	return &Error{Class: c, Reason: reason, Err: err}
}

// classify sorts a transport or API error.
func classify(ctx context.Context, err error, retryAfter time.Duration) *Error {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	status, msg := 0, err.Error()
	switch {
	case errors.As(err, &apiErr):
		status, msg = apiErr.HTTPStatusCode, apiErr.Message
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
		if len(reqErr.Body) > 0 {
			msg = strings.TrimSpace(string(reqErr.Body))
		}
	}
	if status != 0 {
		return statusError(status, msg, retryAfter)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return newErr(Retryable, "timeout", err)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), isNetErr(err):
		return newErr(Retryable, "connection", err)
	default:
		return newErr(Retryable, "transport", err)
	}
}

// statusError sorts an HTTP error status: 402 pauses, 429, 408 and 5xx
// are retried, the rest are permanent.
func statusError(status int, msg string, retryAfter time.Duration) *Error {
	e := &Error{Status: status, Reason: fmt.Sprintf("http_%d", status), RetryAfter: retryAfter,
		Err: fmt.Errorf("HTTP %d %s: %s", status, http.StatusText(status), truncate(msg, 500))}
	switch {
	case status == http.StatusPaymentRequired:
		e.Class = Pause
	case status == http.StatusTooManyRequests, status >= 500, status == http.StatusRequestTimeout:
		e.Class = Retryable
	default: // 400, 401, 403, 404, 422 …
		e.Class = Permanent
	}
	return e
}

// FinishContentFilter and FinishNoResource are DeepSeek's finish reasons
// besides stop and length: the output was withheld by its content filter,
// or the request was cut off because DeepSeek ran short of capacity.
const (
	FinishContentFilter = "content_filter"
	FinishNoResource    = "insufficient_system_resource"
)

// finishError sorts an answer by its finish reason. Only "stop" is a
// complete answer. "length" was cut at max_tokens and "insufficient_system_
// resource" by DeepSeek's capacity: both may do better next time
// (Retryable). "content_filter" output is discarded, as the seed does: the
// same input meets the same filter, so retrying only burns tokens
// (Permanent: dead letter with the reason). A blank answer is Retryable;
// any other reason (tool_calls, one DeepSeek adds later) is not an answer
// mull asked for and is retried.
func finishError(reason openai.FinishReason, content string, maxTokens int) error {
	switch {
	case reason == openai.FinishReasonLength:
		return newErr(Retryable, "truncated", fmt.Errorf("output cut at max_tokens=%d (finish_reason length)", maxTokens))
	case reason == FinishContentFilter:
		return newErr(Permanent, "finish_"+FinishContentFilter,
			errors.New("DeepSeek's content filter withheld the output (finish_reason content_filter); it is discarded, and the same input would be filtered again"))
	case reason == FinishNoResource:
		return newErr(Retryable, "finish_"+FinishNoResource,
			errors.New("DeepSeek ran out of capacity mid-answer (finish_reason insufficient_system_resource)"))
	case strings.TrimSpace(content) == "":
		return newErr(Retryable, "blank", fmt.Errorf("blank content (finish_reason %q)", reason))
	case reason != openai.FinishReasonStop:
		return newErr(Retryable, "finish_"+string(reason), fmt.Errorf("unexpected finish_reason %q", reason))
	}
	return nil
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
