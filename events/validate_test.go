package events_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/events"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func ev(typ events.Type, payload string) events.Event {
	return events.Event{ID: "e1", Type: typ, SessionID: "session-1", Workspace: "/home/dev/app", Time: now, Payload: json.RawMessage(payload)}
}

func TestValidate(t *testing.T) {
	exit2 := `{"tool":"bash","command":"go test","exit_code":2,"is_error":true,"output":"FAIL"}`
	tests := []struct {
		name  string
		e     events.Event
		field string // "" = valid
		want  string
	}{
		{"tool result", ev(events.ToolResult, exit2), "", ""},
		{"empty payload", ev(events.SessionEnd, ""), "", ""},
		{"null payload", ev(events.CompactionEnd, "null"), "", ""},
		{"missing id", func() events.Event { e := ev(events.SessionEnd, ""); e.ID = ""; return e }(), "id", "required"},
		{"unknown type", ev("nap", "{}"), "type", `unknown type "nap"`},
		{"relative workspace", func() events.Event { e := ev(events.SessionEnd, ""); e.Workspace = "app"; return e }(), "workspace", "absolute"},
		{"no time", func() events.Event { e := ev(events.SessionEnd, ""); e.Time = time.Time{}; return e }(), "time", "required"},
		{"future time", func() events.Event { e := ev(events.SessionEnd, ""); e.Time = now.Add(48 * time.Hour); return e }(), "time", "future"},
		{"unknown payload field", ev(events.Feedback, `{"rating":"down","txt":"no"}`), "payload", `unknown field "txt"`},
		{"wrong payload type", ev(events.ToolResult, `{"tool":"bash","exit_code":"two"}`), "payload", `"exit_code"`},
		{"bad rating", ev(events.Feedback, `{"rating":"meh"}`), "payload.rating", `"meh" is not one of down, up, none`},
		{"blank message", ev(events.UserMessage, `{"text":"  "}`), "payload.text", "required"},
		{"tool without name", ev(events.ToolResult, `{"is_error":true}`), "payload.tool", "required"},
		{"bad turn reason", ev(events.TurnEnd, `{"turn":1,"reason":"tired"}`), "payload.reason", "not one of"},
		{"huge output", ev(events.ToolResult, `{"tool":"bash","output":"`+strings.Repeat("x", events.MaxOutput+1)+`"}`), "payload.output", "cut it"},
		{"reasoning", ev(events.AssistantMessage, `{"text":"Done.","reasoning":"the test fails on the total","turn":1}`), "", ""},
		{"reasoning and no text", ev(events.AssistantMessage, `{"reasoning":"check the invoice first","turn":1}`), "", ""},
		{"neither text nor reasoning", ev(events.AssistantMessage, `{"text":" ","reasoning":" "}`), "payload.text", "required"},
		{"huge reasoning", ev(events.AssistantMessage, `{"text":"x","reasoning":"`+strings.Repeat("r", events.MaxReasoning+1)+`"}`), "payload.reasoning", "longer than 8192 bytes; cut it"},
		{"reasoning at the cap", ev(events.AssistantMessage, `{"text":"x","reasoning":"`+strings.Repeat("r", events.MaxReasoning)+`"}`), "", ""},
		{"user reasoning", ev(events.UserMessage, `{"text":"fix it","reasoning":"hmm"}`), "payload.reasoning", "only an assistant_message"},
		{"bad fs op", ev(events.FSObserved, `{"path":"/a","op":"touch"}`), "payload.op", "not one of"},
		{"usage", ev(events.Usage, `{"model":"deepseek-v4-flash","input_tokens":245,"cache_read_tokens":8384,"output_tokens":36,"reasoning_tokens":10,"turn":1,"step":1}`), "", ""},
		{"usage without reasoning", ev(events.Usage, `{"input_tokens":1,"cache_read_tokens":0,"output_tokens":2}`), "", ""},
		{"negative usage", ev(events.Usage, `{"input_tokens":-1,"cache_read_tokens":0,"output_tokens":2}`), "payload.input_tokens", "negative"},
		{"absurd usage", ev(events.Usage, `{"input_tokens":1,"cache_read_tokens":1099511627777,"output_tokens":2}`), "payload.cache_read_tokens", "more than"},
		{"reasoning over output", ev(events.Usage, `{"input_tokens":1,"output_tokens":2,"reasoning_tokens":3}`), "payload.reasoning_tokens", "more than output_tokens"},
		{"fractional tokens", ev(events.Usage, `{"input_tokens":1.5}`), "payload", `"input_tokens"`},
		{"usage negative step", ev(events.Usage, `{"input_tokens":1,"step":-1}`), "payload.step", "negative"},
		{"usage unknown field", ev(events.Usage, `{"input_tokens":1,"cost":3}`), "payload", `unknown field "cost"`},
		{"error with status", ev(events.Error, `{"message":"boom","code":"SERVER","status":500,"request_id":"e159ee1a"}`), "", ""},
		{"error bad status", ev(events.Error, `{"message":"boom","status":42}`), "payload.status", "not an HTTP status"},
		{"title", ev(events.SessionTitle, `{"title":"Fix the invoice total","source":"fallback"}`), "", ""},
		{"blank title", ev(events.SessionTitle, `{"title":" "}`), "payload.title", "required"},
		{"task open", ev(events.TaskOpen, `{"task_id":"task-1","goal":"fix the build","expected_result":"go test passes"}`), "", ""},
		{"task open without goal", ev(events.TaskOpen, `{"task_id":"task-1","expected_result":"x"}`), "payload.goal", "required"},
		{"task open old title", ev(events.TaskOpen, `{"task_id":"task-1","title":"build"}`), "payload", `unknown field "title"`},
		{"task close", ev(events.TaskClose, `{"task_id":"task-1","status":"aborted","result":"user stopped it"}`), "", ""},
		{"task close old outcome", ev(events.TaskClose, `{"task_id":"task-1","status":"done"}`), "payload.status", `"done" is not one of succeeded, failed, abandoned, aborted`},
		{"task close without status", ev(events.TaskClose, `{"task_id":"task-1"}`), "payload.status", "not one of"},
		{"task close old fields", ev(events.TaskClose, `{"task_id":"task-1","outcome":"done"}`), "payload", `unknown field "outcome"`},
		{"long title", ev(events.SessionTitle, `{"title":"`+strings.Repeat("t", events.MaxTitle+1)+`"}`), "payload.title", "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.e
			err := events.Validate(&e, now)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("valid event refused: %v", err)
				}
				return
			}
			if err == nil || err.Field != tt.field || !strings.Contains(err.Problem, tt.want) {
				t.Fatalf("error %v; want field %q with %q", err, tt.field, tt.want)
			}
		})
	}
}

func TestValidateBatchNamesTheIndex(t *testing.T) {
	batch := []events.Event{ev(events.SessionStart, "{}"), ev(events.Feedback, `{"rating":"sideways"}`)}
	err := events.ValidateBatch(batch, now)
	var fe *events.FieldError
	if !errors.As(err, &fe) || fe.Index != 1 || fe.Field != "payload.rating" {
		t.Fatalf("err = %v", err)
	}
	if err.Error() != `event 1: payload.rating: "sideways" is not one of down, up, none` {
		t.Fatalf("message %q", err.Error())
	}
	if err := events.ValidateBatch(nil, now); err == nil {
		t.Fatal("empty batch accepted")
	}
}

func TestDSHID(t *testing.T) {
	if got := events.DSHID("session-x", 42, ""); got != "dsh:session-x:42" {
		t.Fatal(got)
	}
	if got := events.DSHID("session-x", 42, "call_1"); got != "dsh:session-x:42:call_1" {
		t.Fatal(got)
	}
}
