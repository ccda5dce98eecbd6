// Package events is mull's model of what happens in a DSH session: the
// events the bridge plugin pushes to POST /v1/events and the importer reads
// from DSH's session logs. It is pure: types, payloads and validation.
package events

import (
	"encoding/json"
	"time"
)

// Type is an event's type.
type Type string

// The event types.
const (
	SessionStart     Type = "session_start"
	SessionEnd       Type = "session_end"
	UserMessage      Type = "user_message"
	AssistantMessage Type = "assistant_message"
	TurnEnd          Type = "turn_end"
	TaskOpen         Type = "task_open"
	TaskClose        Type = "task_close"
	ToolResult       Type = "tool_result"
	Error            Type = "error"
	Feedback         Type = "feedback"
	CompactionEnd    Type = "compaction_end"
	FSObserved       Type = "fs_observed"
	// Usage is the agent's own token usage for one model response (one
	// step), so mull can say what its learning costs next to the work.
	Usage Type = "usage"
	// SessionTitle names a session (DSH's session/title rows: a fallback
	// from the prompt first, then the model's title).
	SessionTitle Type = "session_title"
)

// Event is one thing that happened in a session.
type Event struct {
	// ID is the client's id for the event; storing an id twice is a no-op,
	// so a replayed batch stores nothing new. Events read from a DSH log
	// use DSHID, which the bridge plugin uses too, so a pushed event and the
	// same event imported later meet as one.
	ID string `json:"id"`
	// Type says what happened; Payload's shape depends on it.
	Type Type `json:"type"`
	// SessionID is DSH's session id ("session-<uuid>").
	SessionID string `json:"session_id"`
	// Workspace is the DSH cwd, an absolute path.
	Workspace string `json:"workspace"`
	// Time is when it happened.
	Time time.Time `json:"time"`
	// Payload is the type's payload; empty means {}.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// DSHID is the id of the event derived from a DSH log row: the session and
// the row's seq, plus a suffix when one row yields several events.
func DSHID(sessionID string, seq int64, suffix string) string {
	id := "dsh:" + sessionID + ":" + itoa(seq)
	if suffix != "" {
		id += ":" + suffix
	}
	return id
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// SessionStartPayload opens a session.
type SessionStartPayload struct {
	Title string `json:"title,omitempty"`
	// Primary is false for subagent sessions (DSH delegation depth > 0).
	Primary *bool `json:"primary,omitempty"`
	// Parent is the session a subagent session was started from (DSH's
	// header parentSession): its failures are evidence for the parent's
	// retro.
	Parent string `json:"parent,omitempty"`
}

// SessionEndPayload closes a session.
type SessionEndPayload struct {
	// Reason: "completed", "error", "idle", "disposed" …
	Reason string `json:"reason,omitempty"`
}

// MessagePayload is a user or assistant message's text.
type MessagePayload struct {
	Text string `json:"text"`
	// Source of a user message: "user" (a human) or "plugin" (harness-written).
	Source string `json:"source,omitempty"`
	Turn   int    `json:"turn,omitempty"`
	// MessageID is DSH's id of an assistant message, which per-message
	// feedback names.
	MessageID string `json:"message_id,omitempty"`
	// Reasoning is an assistant message's reasoning (DSH's reasoning
	// blocks), cut by the sender to MaxReasoning. It is untrusted session
	// text, like Text: the reflection quotes excerpts of it only when the
	// agent said nothing outward. An assistant message may have reasoning
	// and no text (a step of tool calls); a user message has none.
	Reasoning string `json:"reasoning,omitempty"`
}

// TurnEndPayload ends a turn.
type TurnEndPayload struct {
	Turn int `json:"turn"`
	// Reason: "completed", "error", "aborted", "max-tokens".
	Reason string `json:"reason"`
	// Error is the failure message when Reason is "error".
	Error string `json:"error,omitempty"`
}

// TaskOpenPayload opens a task (the seed's task_start): what the agent
// means to do and what it expects to come of it.
type TaskOpenPayload struct {
	TaskID         string `json:"task_id"`
	Goal           string `json:"goal"`
	ExpectedResult string `json:"expected_result,omitempty"`
}

// TaskClosePayload closes a task (the seed's task_end).
type TaskClosePayload struct {
	TaskID string `json:"task_id"`
	// Status: "succeeded", "failed", "abandoned", "aborted" (TaskStatuses).
	Status string `json:"status"`
	Result string `json:"result,omitempty"`
}

// TaskStatuses are the ways a task ends, the seed's four.
var TaskStatuses = []string{"succeeded", "failed", "abandoned", "aborted"}

// ToolResultPayload is a tool call and how it ended.
type ToolResultPayload struct {
	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool"`
	// Command is the bash command line, or the call's arguments (JSON) for
	// other tools.
	Command string `json:"command,omitempty"`
	// ExitCode is bash's exit code when known.
	ExitCode *int `json:"exit_code,omitempty"`
	// IsError: the tool failed (an error result, or a non-zero exit code).
	IsError bool `json:"is_error"`
	// ErrorCode is a typed cause such as FS_NOT_FOUND.
	ErrorCode string `json:"error_code,omitempty"`
	// Output is the result text, cut to MaxOutput.
	Output string `json:"output,omitempty"`
	Turn   int    `json:"turn,omitempty"`
}

// ErrorPayload is an agent or provider error.
type ErrorPayload struct {
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
	// Status is the provider's HTTP status (DSH's failure.status), when the
	// failure came from a response: 500 and 429 retry, 400 does not.
	Status int `json:"status,omitempty"`
	// RequestID is the provider's request id (its x-request-id header), the
	// one thing its support can look a failed call up by.
	RequestID string `json:"request_id,omitempty"`
	Turn      int    `json:"turn,omitempty"`
}

// UsagePayload is what one model response of the agent consumed, as DSH
// logs it (assistant/message.data.usage, the same as the step's usage
// chunk). DeepSeek bills a prompt's cache hits and misses apart, so they
// are kept apart: the prompt was InputTokens + CacheReadTokens.
type UsagePayload struct {
	// Model is the agent's model ("deepseek-v4-flash"), which prices it.
	Model string `json:"model,omitempty"`
	// Provider is DSH's provider id ("deepseek-official").
	Provider string `json:"provider,omitempty"`
	// InputTokens are the prompt tokens the cache did not serve (DSH's
	// inputTokens, DeepSeek's prompt_cache_miss_tokens).
	InputTokens int64 `json:"input_tokens"`
	// CacheReadTokens are the prompt tokens served from the prefix cache
	// (DeepSeek's prompt_cache_hit_tokens).
	CacheReadTokens int64 `json:"cache_read_tokens"`
	// OutputTokens are the completion tokens, reasoning included.
	OutputTokens int64 `json:"output_tokens"`
	// ReasoningTokens are the part of OutputTokens spent thinking, when the
	// provider says.
	ReasoningTokens *int64 `json:"reasoning_tokens,omitempty"`
	Turn            int    `json:"turn,omitempty"`
	Step            int    `json:"step,omitempty"`
}

// MaxTokens bounds each token count of a usage event: far above any
// model's context window, low enough that sums over years never overflow.
const MaxTokens = 1 << 40

// SessionTitlePayload is a session's title.
type SessionTitlePayload struct {
	Title string `json:"title"`
	// Source: "fallback" (cut from the prompt) or the title's maker
	// ("provider"): a fallback never replaces another title.
	Source string `json:"source,omitempty"`
}

// FeedbackPayload is the user's feedback: a thumbs up or down on one
// assistant message (DSH's per-message feedback, with its note), or free
// text without a rating (DSH's /feedback).
type FeedbackPayload struct {
	// Rating: "down", "up", or "none" for free text that gives none.
	Rating string `json:"rating"`
	Text   string `json:"text,omitempty"`
	// MessageID is the assistant message rated, for per-message feedback.
	// A message's feedback can change: its newest event is the one that
	// counts.
	MessageID string `json:"message_id,omitempty"`
}

// CompactionEndPayload marks a finished context compaction.
type CompactionEndPayload struct{}

// FSObservedPayload is a file the agent saw change.
type FSObservedPayload struct {
	Path string `json:"path"`
	// Op: "create", "modify", "delete".
	Op string `json:"op"`
}

// payloadOf returns a fresh payload value for a type.
func payloadOf(t Type) (any, bool) {
	switch t {
	case SessionStart:
		return &SessionStartPayload{}, true
	case SessionEnd:
		return &SessionEndPayload{}, true
	case UserMessage, AssistantMessage:
		return &MessagePayload{}, true
	case TurnEnd:
		return &TurnEndPayload{}, true
	case TaskOpen:
		return &TaskOpenPayload{}, true
	case TaskClose:
		return &TaskClosePayload{}, true
	case ToolResult:
		return &ToolResultPayload{}, true
	case Error:
		return &ErrorPayload{}, true
	case Feedback:
		return &FeedbackPayload{}, true
	case CompactionEnd:
		return &CompactionEndPayload{}, true
	case FSObserved:
		return &FSObservedPayload{}, true
	case Usage:
		return &UsagePayload{}, true
	case SessionTitle:
		return &SessionTitlePayload{}, true
	}
	return nil, false
}

// Types lists every event type.
func Types() []Type {
	return []Type{SessionStart, SessionEnd, UserMessage, AssistantMessage, TurnEnd, TaskOpen, TaskClose,
		ToolResult, Error, Feedback, CompactionEnd, FSObserved, Usage, SessionTitle}
}
