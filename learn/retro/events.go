package retro

import (
	"encoding/json"
	"strings"

	"github.com/mullhq/mull/events"
)

// FromEvents gathers a session's evidence from its events, in the order
// they happened: error events; failed tool results, each with the next call
// of the same tool on the same target and how it ended (the retry or the
// fix); feedback; and the human's and the agent's messages. The seed's
// error retro reads the same four kinds.
//
//   - Feedback: a message's newest per-message rating counts (a 👎 taken
//     back is no evidence); every 👎 is, and unrated free text (DSH's
//     /feedback) is too, marked unrated. A 👎 carries the text of the
//     message it was given to.
//   - Messages the harness wrote (source "plugin": DSH's runtime-context
//     snapshot, other plugins' messages) are not the user's words and are
//     left out; mull's own notices never reach the store.
//
// An event whose payload does not decode is skipped: events are validated
// at ingest, so that is an old or foreign row, not evidence.
func FromEvents(evs []events.Event) Input {
	var in Input
	pending := map[string][]int{} // tool and target → failures waiting for the next call
	said := map[string]string{}   // assistant message id → its text
	rated := map[string]int{}     // message id → index in in.Feedback
	for _, e := range evs {
		switch e.Type {
		case events.Error:
			var p events.ErrorPayload
			if decode(e, &p) {
				in.Errors = append(in.Errors, Error{Time: e.Time, Message: p.Message, Code: p.Code, Turn: p.Turn})
			}
		case events.ToolResult:
			var p events.ToolResultPayload
			if !decode(e, &p) {
				continue
			}
			key := p.Tool + "\x00" + target(p.Tool, p.Command)
			for _, i := range pending[key] {
				in.ToolFailures[i].Next = &ToolCall{Time: e.Time, Command: p.Command, ExitCode: p.ExitCode,
					IsError: p.IsError, ErrorCode: p.ErrorCode, Output: p.Output}
			}
			delete(pending, key)
			if p.IsError {
				pending[key] = append(pending[key], len(in.ToolFailures))
				in.ToolFailures = append(in.ToolFailures, ToolFailure{Time: e.Time, Tool: p.Tool, Command: p.Command,
					ExitCode: p.ExitCode, ErrorCode: p.ErrorCode, Output: p.Output})
			}
		case events.Feedback:
			var p events.FeedbackPayload
			if !decode(e, &p) {
				continue
			}
			f := Feedback{Time: e.Time, Text: p.Text, Unrated: p.Rating == "none", On: said[p.MessageID]}
			if p.MessageID == "" {
				if p.Rating != "up" {
					in.Feedback = append(in.Feedback, f)
				}
				continue
			}
			i, seen := rated[p.MessageID]
			switch {
			case !seen && p.Rating == "up":
			case !seen:
				rated[p.MessageID] = len(in.Feedback)
				in.Feedback = append(in.Feedback, f)
			case in.Feedback[i].Time.After(e.Time): // an older revision
			case p.Rating == "up": // taken back
				in.Feedback[i] = Feedback{}
			default:
				in.Feedback[i] = f
			}
		case events.UserMessage, events.AssistantMessage:
			var p events.MessagePayload
			// An assistant message may be reasoning only, with no text: the
			// retro reads what was said, never the reasoning.
			if !decode(e, &p) || p.Source == "plugin" || strings.TrimSpace(p.Text) == "" {
				continue
			}
			role := "assistant"
			if e.Type == events.UserMessage {
				role = "user"
			} else if p.MessageID != "" {
				said[p.MessageID] = p.Text
			}
			in.Transcript = append(in.Transcript, Message{Time: e.Time, Role: role, Text: p.Text})
		}
	}
	kept := in.Feedback[:0]
	for _, f := range in.Feedback {
		if !f.Time.IsZero() || f.Text != "" {
			kept = append(kept, f)
		}
	}
	in.Feedback = kept
	return in
}

// AddSubagent adds the failures of one of the session's subagent sessions,
// read from its events: its errors and failed tool calls (each with its
// next call on the same target), marked with the subagent's id. The seed
// counts them as evidence for the parent.
func (in *Input) AddSubagent(id string, evs []events.Event) {
	sub := FromEvents(evs)
	for _, e := range sub.Errors {
		e.Subagent = id
		in.Errors = append(in.Errors, e)
	}
	for _, f := range sub.ToolFailures {
		f.Subagent = id
		in.ToolFailures = append(in.ToolFailures, f)
	}
}

func decode(e events.Event, v any) bool {
	if len(e.Payload) == 0 {
		return true
	}
	return json.Unmarshal(e.Payload, v) == nil
}
