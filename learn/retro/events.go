package retro

import (
	"encoding/json"

	"github.com/mullhq/mull/events"
)

// FromEvents gathers a session's evidence from its events: error events,
// failed tool results, thumbs-down feedback, and user and assistant
// messages. The seed's error retro reads the same four kinds. An event whose
// payload does not decode is skipped: events are validated at ingest, so
// that is an old or foreign row, not evidence.
func FromEvents(evs []events.Event) Input {
	var in Input
	for _, e := range evs {
		switch e.Type {
		case events.Error:
			var p events.ErrorPayload
			if decode(e, &p) {
				in.Errors = append(in.Errors, Error{Time: e.Time, Message: p.Message, Code: p.Code, Turn: p.Turn})
			}
		case events.ToolResult:
			var p events.ToolResultPayload
			if decode(e, &p) && p.IsError {
				in.ToolFailures = append(in.ToolFailures, ToolFailure{Time: e.Time, Tool: p.Tool, Command: p.Command,
					ExitCode: p.ExitCode, ErrorCode: p.ErrorCode, Output: p.Output})
			}
		case events.Feedback:
			var p events.FeedbackPayload
			if decode(e, &p) && p.Rating == "down" {
				in.Feedback = append(in.Feedback, Feedback{Time: e.Time, Text: p.Text})
			}
		case events.UserMessage, events.AssistantMessage:
			var p events.MessagePayload
			if decode(e, &p) {
				role := "assistant"
				if e.Type == events.UserMessage {
					role = "user"
				}
				in.Transcript = append(in.Transcript, Message{Time: e.Time, Role: role, Text: p.Text})
			}
		}
	}
	return in
}

func decode(e events.Event, v any) bool {
	if len(e.Payload) == 0 {
		return true
	}
	return json.Unmarshal(e.Payload, v) == nil
}
