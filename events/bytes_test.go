package events_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mullhq/mull/events"
)

// validPayloads has one valid payload per type; the byte tests spoil one
// string field of it at a time.
var validPayloads = map[events.Type]string{
	events.SessionStart:     `{"title":"fix the build"}`,
	events.SessionEnd:       `{"reason":"completed"}`,
	events.UserMessage:      `{"text":"hi","source":"user"}`,
	events.AssistantMessage: `{"text":"hello"}`,
	events.TurnEnd:          `{"turn":1,"reason":"error","error":"boom"}`,
	events.TaskOpen:         `{"task_id":"t1","goal":"build","expected_result":"a binary"}`,
	events.TaskClose:        `{"task_id":"t1","status":"succeeded","result":"built"}`,
	events.ToolResult:       `{"call_id":"c1","tool":"bash","command":"go test","error_code":"E","output":"ok"}`,
	events.Error:            `{"message":"boom","code":"E1","status":500,"request_id":"r1"}`,
	events.Feedback:         `{"rating":"down","text":"no"}`,
	events.CompactionEnd:    `{}`,
	events.FSObserved:       `{"path":"/a","op":"create"}`,
	events.Usage:            `{"model":"deepseek-v4-flash","provider":"deepseek-official","input_tokens":245,"cache_read_tokens":8384,"output_tokens":36,"reasoning_tokens":10,"turn":1,"step":1}`,
	events.SessionTitle:     `{"title":"Fix the invoice total","source":"provider"}`,
}

// stringFields lists the JSON names of a payload type's string fields, by
// reflection, so a field added later is covered without editing this test.
func stringFields(t *testing.T, typ events.Type) []string {
	t.Helper()
	e := ev(typ, validPayloads[typ])
	if err := events.Validate(&e, now); err != nil {
		t.Fatalf("%s: the valid payload is refused: %v", typ, err)
	}
	var fields []string
	for _, p := range []any{events.SessionStartPayload{}, events.SessionEndPayload{}, events.MessagePayload{}, events.TurnEndPayload{},
		events.TaskOpenPayload{}, events.TaskClosePayload{}, events.ToolResultPayload{}, events.ErrorPayload{},
		events.FeedbackPayload{}, events.CompactionEndPayload{}, events.FSObservedPayload{}, events.UsagePayload{},
		events.SessionTitlePayload{}} {
		rt := reflect.TypeOf(p)
		if payloadType(typ) != rt {
			continue
		}
		for i := range rt.NumField() {
			if f := rt.Field(i); f.Type.Kind() == reflect.String {
				fields = append(fields, strings.Split(f.Tag.Get("json"), ",")[0])
			}
		}
	}
	return fields
}

func payloadType(typ events.Type) reflect.Type {
	m := map[events.Type]any{
		events.SessionStart: events.SessionStartPayload{}, events.SessionEnd: events.SessionEndPayload{},
		events.UserMessage: events.MessagePayload{}, events.AssistantMessage: events.MessagePayload{},
		events.TurnEnd: events.TurnEndPayload{}, events.TaskOpen: events.TaskOpenPayload{},
		events.TaskClose: events.TaskClosePayload{}, events.ToolResult: events.ToolResultPayload{},
		events.Error: events.ErrorPayload{}, events.Feedback: events.FeedbackPayload{},
		events.CompactionEnd: events.CompactionEndPayload{}, events.FSObserved: events.FSObservedPayload{},
		events.Usage: events.UsagePayload{}, events.SessionTitle: events.SessionTitlePayload{},
	}
	return reflect.TypeOf(m[typ])
}

// TestValidateRefusesBadBytes spoils every string field of every event
// type (and the envelope's) with a NUL, invalid UTF-8 and a megabyte, and
// wants the field named each time.
func TestValidateRefusesBadBytes(t *testing.T) {
	spoils := map[string]string{"NUL": "a\x00b", "invalid UTF-8": "a\xffb", "over-long": strings.Repeat("x", 1<<20)}
	want := map[string]string{"NUL": "NUL", "invalid UTF-8": "UTF-8", "over-long": "longer than"}
	for _, typ := range events.Types() {
		if len(validPayloads[typ]) == 0 {
			t.Fatalf("no valid payload for %s: add one to validPayloads", typ)
		}
		for _, field := range stringFields(t, typ) {
			for kind, bad := range spoils {
				var p map[string]any
				if err := json.Unmarshal([]byte(validPayloads[typ]), &p); err != nil {
					t.Fatal(err)
				}
				p[field] = bad
				raw, _ := json.Marshal(p) // Marshal keeps NUL as \u0000 and turns bad bytes into U+FFFD…
				if kind == "invalid UTF-8" {
					raw = []byte(strings.Replace(string(raw), `\ufffd`, "\xff", 1)) // …so put them back
				}
				e := ev(typ, string(raw))
				err := events.Validate(&e, now)
				if err == nil || err.Field != "payload."+field || !strings.Contains(err.Problem, want[kind]) {
					t.Errorf("%s.%s with %s: got %v; want payload.%s: …%s…", typ, field, kind, err, field, want[kind])
				}
			}
		}
	}
	envelope := map[string]func(*events.Event, string){
		"id": func(e *events.Event, s string) { e.ID = s }, "session_id": func(e *events.Event, s string) { e.SessionID = s },
		"workspace": func(e *events.Event, s string) { e.Workspace = "/" + s }, "type": func(e *events.Event, s string) { e.Type = events.Type(s) },
	}
	for field, set := range envelope {
		for kind, bad := range spoils {
			e := ev(events.SessionEnd, "")
			set(&e, bad)
			err := events.Validate(&e, now)
			if err == nil || err.Field != field || !strings.Contains(err.Problem, want[kind]) {
				t.Errorf("%s with %s: got %v", field, kind, err)
			}
		}
	}
}

// TestValidateNames: identifiers and labels refuse every control
// character; free texts keep newlines, tabs and terminal escapes.
func TestValidateNames(t *testing.T) {
	e := ev(events.SessionEnd, `{"reason":"idle\nfake"}`)
	if err := events.Validate(&e, now); err == nil || err.Field != "payload.reason" || !strings.Contains(err.Problem, "U+000A") {
		t.Fatalf("a reason with a newline: %v", err)
	}
	e = ev(events.SessionEnd, "")
	e.Workspace = "/home/dev/a\x1b[2Jb"
	if err := events.Validate(&e, now); err == nil || err.Field != "workspace" {
		t.Fatalf("a workspace with an escape: %v", err)
	}
	e = ev(events.ToolResult, `{"tool":"bash","output":"\u001b[31mFAIL\u001b[0m\n\tat x"}`)
	if err := events.Validate(&e, now); err != nil {
		t.Fatalf("tool output with colours and lines refused: %v", err)
	}
	e = ev(events.SessionEnd, `{"reason":"`+strings.Repeat("r", events.MaxName)+`"}`)
	if err := events.Validate(&e, now); err != nil {
		t.Fatalf("a reason of exactly MaxName bytes refused: %v", err)
	}
}
