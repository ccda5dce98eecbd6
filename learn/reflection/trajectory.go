package reflection

import (
	"cmp"
	"encoding/json"
	"strings"
	"time"

	"github.com/mullhq/mull/events"
)

// The decision trajectory is what a reflection reads of the task window:
// what the user asked and corrected, what the agent said outward, its
// reasoning only when it said nothing, and how many tool calls failed. It
// is not a list of tool calls: the reflection judges the agent's decisions,
// not its tool technique (the seed's task-context).

// Event is one stored session event of the window, as the trajectory
// reads it. EventOf builds it from a stored events.Event.
type Event struct {
	// Seq is the event's per-session ordinal (events.seq).
	Seq  int64
	Time time.Time
	Type events.Type
	// Text is a message's text.
	Text string
	// Reasoning is an assistant message's reasoning, when DSH sent it.
	Reasoning string
	// Source of a user message: "plugin" is the harness's, not the user's.
	Source string
	// Tool and IsError describe a tool_result.
	Tool    string
	IsError bool
	Turn    int
}

// EventOf reads the fields the trajectory needs from a stored event. A
// payload that does not decode leaves them empty (events are validated at
// ingest; such a row is old or foreign).
func EventOf(seq int64, e events.Event) Event {
	ev := Event{Seq: seq, Time: e.Time, Type: e.Type}
	if len(e.Payload) == 0 {
		return ev
	}
	switch e.Type {
	case events.UserMessage, events.AssistantMessage:
		var p struct {
			events.MessagePayload
			Reasoning string `json:"reasoning"`
		}
		if json.Unmarshal(e.Payload, &p) == nil {
			ev.Text, ev.Reasoning, ev.Source, ev.Turn = p.Text, p.Reasoning, p.Source, p.Turn
		}
	case events.ToolResult:
		var p events.ToolResultPayload
		if json.Unmarshal(e.Payload, &p) == nil {
			ev.Tool, ev.IsError, ev.Turn = p.Tool, p.IsError, p.Turn
		}
	case events.TurnEnd:
		var p events.TurnEndPayload
		if json.Unmarshal(e.Payload, &p) == nil {
			ev.Turn = p.Turn
		}
	}
	return ev
}

// Role is who an entry of the trajectory is from.
type Role string

// The roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleReasoning is an excerpt of the agent's reasoning, taken only when
	// the window has no outward statement.
	RoleReasoning Role = "reasoning"
)

// Entry is one item of the trajectory.
type Entry struct {
	Seq  int64
	Role Role
	Text string
}

// Trajectory is the decision trajectory of one window.
type Trajectory struct {
	// FromSeq and ToSeq are the window's event seq range (0 when empty).
	FromSeq, ToSeq int64
	// Entries are oldest first: the first entry and the newest ones, at
	// most MaxEntries.
	Entries []Entry
	// Omitted counts the entries left out between the first and the
	// newest kept.
	Omitted int
	// ReasoningOnly: the agent said nothing outward, so Entries hold
	// reasoning excerpts.
	ReasoningOnly bool
	// ToolCalls and ToolFailures count the window's tool results (task
	// tools not counted), a side signal only.
	ToolCalls, ToolFailures int
	// Errors counts agent and provider errors.
	Errors int
}

// Empty reports a window with nothing to reflect on: no dialogue, no
// reasoning, no failures.
func (t Trajectory) Empty() bool {
	return len(t.Entries) == 0 && t.Omitted == 0 && t.ToolFailures == 0 && t.Errors == 0
}

// TrajectoryOptions cap a trajectory. The zero value of a field takes its
// default.
type TrajectoryOptions struct {
	// MaxEntries bounds the entries kept. Defaults to 40.
	MaxEntries int
	// MaxReasoning bounds the reasoning excerpts. Defaults to 6.
	MaxReasoning int
	// ReasoningRunes cuts each reasoning excerpt. Defaults to 400.
	ReasoningRunes int
}

// DefaultTrajectory are the default caps.
var DefaultTrajectory = TrajectoryOptions{MaxEntries: 40, MaxReasoning: 6, ReasoningRunes: 400}

// WithDefaults fills the zero fields from DefaultTrajectory.
func (o TrajectoryOptions) WithDefaults() TrajectoryOptions {
	d := DefaultTrajectory
	return TrajectoryOptions{MaxEntries: cmp.Or(o.MaxEntries, d.MaxEntries), MaxReasoning: cmp.Or(o.MaxReasoning, d.MaxReasoning),
		ReasoningRunes: cmp.Or(o.ReasoningRunes, d.ReasoningRunes)}
}

// TaskTools are the bridge's own tools: bookkeeping, not work. They are
// counted neither as work (the nudge) nor as tool calls here.
var TaskTools = []string{"task_start", "task_end", "task_reflect", "lessons_lookup"}

// IsTaskTool reports whether name is one of TaskTools.
func IsTaskTool(name string) bool {
	for _, t := range TaskTools {
		if name == t {
			return true
		}
	}
	return false
}

// BuildTrajectory reads the window's events, in the order given: the
// user's messages (not the harness's), the agent's outward statements and,
// only when there is none in the whole window, capped excerpts of its
// reasoning; and the tool-failure and error counts. Each entry's text is
// kept whole here; Material cuts it.
func BuildTrajectory(evs []Event, opts TrajectoryOptions) Trajectory {
	opts = opts.WithDefaults()
	var t Trajectory
	var said, thought []Entry
	for _, e := range evs {
		if e.Seq > 0 {
			if t.FromSeq == 0 || e.Seq < t.FromSeq {
				t.FromSeq = e.Seq
			}
			t.ToSeq = max(t.ToSeq, e.Seq)
		}
		switch e.Type {
		case events.UserMessage:
			if e.Source != "plugin" && strings.TrimSpace(e.Text) != "" {
				said = append(said, Entry{e.Seq, RoleUser, e.Text})
			}
		case events.AssistantMessage:
			if strings.TrimSpace(e.Text) != "" {
				said = append(said, Entry{e.Seq, RoleAssistant, e.Text})
			} else if strings.TrimSpace(e.Reasoning) != "" {
				thought = append(thought, Entry{e.Seq, RoleReasoning, cutRunes(strings.TrimSpace(e.Reasoning), opts.ReasoningRunes)})
			}
		case events.ToolResult:
			if IsTaskTool(e.Tool) {
				continue
			}
			t.ToolCalls++
			if e.IsError {
				t.ToolFailures++
			}
		case events.Error:
			t.Errors++
		}
	}
	if !hasStatement(said) {
		t.ReasoningOnly = len(thought) > 0
		said = merge(said, newest(thought, opts.MaxReasoning))
	}
	t.Entries, t.Omitted = keepFirstAndNewest(said, opts.MaxEntries)
	return t
}

func hasStatement(es []Entry) bool {
	for _, e := range es {
		if e.Role == RoleAssistant {
			return true
		}
	}
	return false
}

func newest(es []Entry, n int) []Entry { return es[len(es)-min(n, len(es)):] }

// merge interleaves two seq-ordered lists by seq.
func merge(x, y []Entry) []Entry {
	out := make([]Entry, 0, len(x)+len(y))
	for len(x) > 0 && len(y) > 0 {
		if y[0].Seq < x[0].Seq {
			out, y = append(out, y[0]), y[1:]
		} else {
			out, x = append(out, x[0]), x[1:]
		}
	}
	return append(append(out, x...), y...)
}

// keepFirstAndNewest keeps the first entry (usually the request) and the
// newest n-1.
func keepFirstAndNewest(es []Entry, n int) ([]Entry, int) {
	if len(es) <= n {
		return es, 0
	}
	if n <= 1 {
		return es[:max(n, 0)], len(es) - max(n, 0)
	}
	kept := append([]Entry{es[0]}, es[len(es)-(n-1):]...)
	return kept, len(es) - n
}
