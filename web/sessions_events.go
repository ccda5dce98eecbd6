package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
)

// timelineRow is one event of a session's timeline: a one-line summary of its
// payload, the payload itself for a closer look, and whether it is a
// failure (a failed tool call, an error, a turn that ended in one).
type timelineRow struct {
	store.Event
	Summary string
	Payload string
	Bad     bool
	// Warn marks what is not a failure but asks for a look: a thumbs
	// down, a task that did not succeed.
	Warn bool
}

// maxPayloadShown bounds the payload a timeline row shows.
const maxPayloadShown = 4000

func newTimelineRow(e store.Event) timelineRow {
	r := timelineRow{Event: e}
	var pretty bytes.Buffer
	if json.Indent(&pretty, e.Payload, "", "  ") == nil {
		r.Payload = trunc(maxPayloadShown, pretty.String())
	} else {
		r.Payload = trunc(maxPayloadShown, string(e.Payload))
	}
	r.Summary, r.Bad, r.Warn = eventSummary(events.Type(e.Type), e.Payload)
	r.Summary = trunc(300, r.Summary)
	return r
}

// eventSummary says in a line what an event's payload holds.
func eventSummary(t events.Type, raw json.RawMessage) (line string, bad, warn bool) {
	switch t {
	case events.ToolResult:
		var p events.ToolResultPayload
		_ = json.Unmarshal(raw, &p)
		return toolLine(p), p.IsError, false
	case events.Error:
		var p events.ErrorPayload
		_ = json.Unmarshal(raw, &p)
		return evJoin(p.Message, evTag("code", p.Code), evTag("status", evNonZero(p.Status)), evTag("request", p.RequestID)), true, false
	case events.TurnEnd:
		var p events.TurnEndPayload
		_ = json.Unmarshal(raw, &p)
		return evJoin(fmt.Sprintf("turn %d %s", p.Turn, p.Reason), p.Error), p.Reason == "error", false
	case events.UserMessage, events.AssistantMessage:
		var p events.MessagePayload
		_ = json.Unmarshal(raw, &p)
		text := p.Text
		if text == "" && p.Reasoning != "" {
			text = "(reasoning) " + p.Reasoning
		}
		return evJoin(evLine(text), evTag("from", p.Source)), false, false
	case events.TaskOpen:
		var p events.TaskOpenPayload
		_ = json.Unmarshal(raw, &p)
		return evJoin("opened "+p.TaskID+": "+evLine(p.Goal), evTag("expects", evLine(p.ExpectedResult))), false, false
	case events.TaskClose:
		var p events.TaskClosePayload
		_ = json.Unmarshal(raw, &p)
		return evJoin("closed "+p.TaskID+" "+p.Status, evLine(p.Result)), false, p.Status != "succeeded"
	case events.Feedback:
		var p events.FeedbackPayload
		_ = json.Unmarshal(raw, &p)
		return evJoin("rating "+p.Rating, evLine(p.Text)), false, p.Rating == "down"
	case events.SessionStart:
		var p events.SessionStartPayload
		_ = json.Unmarshal(raw, &p)
		kind := "primary"
		if p.Primary != nil && !*p.Primary {
			kind = "subagent"
		}
		return evJoin(kind, evLine(p.Title), evTag("parent", p.Parent)), false, false
	case events.SessionEnd:
		var p events.SessionEndPayload
		_ = json.Unmarshal(raw, &p)
		return evJoin("ended", p.Reason), false, false
	case events.Usage:
		var p events.UsagePayload
		_ = json.Unmarshal(raw, &p)
		return fmt.Sprintf("%s: %s in (%s cached), %s out", p.Model, num(p.InputTokens+p.CacheReadTokens), num(p.CacheReadTokens), num(p.OutputTokens)), false, false
	case events.FSObserved:
		var p events.FSObservedPayload
		_ = json.Unmarshal(raw, &p)
		return p.Op + " " + p.Path, false, false
	case events.SessionTitle:
		var p events.SessionTitlePayload
		_ = json.Unmarshal(raw, &p)
		return evLine(p.Title), false, false
	}
	return "", false, false
}

func toolLine(p events.ToolResultPayload) string {
	head := p.Tool
	if p.Command != "" {
		head += ": " + evLine(p.Command)
	}
	var tail []string
	if p.ExitCode != nil {
		tail = append(tail, fmt.Sprintf("exit %d", *p.ExitCode))
	}
	if p.ErrorCode != "" {
		tail = append(tail, p.ErrorCode)
	}
	if p.IsError {
		tail = append(tail, "failed")
		if p.Output != "" {
			tail = append(tail, evLine(p.Output))
		}
	}
	return evJoin(head, tail...)
}

// evJoin is head and the non-empty rest, " · " between them.
func evJoin(head string, rest ...string) string {
	parts := []string{}
	if head != "" {
		parts = append(parts, head)
	}
	for _, r := range rest {
		if r != "" {
			parts = append(parts, r)
		}
	}
	return strings.Join(parts, " · ")
}

func evTag(label, v string) string {
	if v == "" {
		return ""
	}
	return label + " " + v
}

func evNonZero(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// evLine folds whitespace runs, newlines included, to single spaces.
func evLine(s string) string { return strings.Join(strings.Fields(s), " ") }
