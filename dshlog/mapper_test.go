package dshlog_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mullhq/mull/dshlog"
	"github.com/mullhq/mull/events"
)

func TestMapFixtures(t *testing.T) {
	tests := []struct {
		fixture
		counts map[events.Type]int
		// tool results as "seq tool exit=N code=C error=bool"
		tools []string
		// the turn_end, and the error event if any, as "reason: message"
		turnEnd, errorEvent string
	}{
		{
			fixture: fixtures[0],
			counts: map[events.Type]int{events.SessionStart: 1, events.UserMessage: 2, events.AssistantMessage: 5, events.ToolResult: 4, events.TurnEnd: 1,
				events.Usage: 5, events.SessionTitle: 2},
			tools: []string{
				"45 bash exit=1 code= error=true", "82 read exit=- code= error=false",
				"132 edit exit=- code= error=false", "155 bash exit=0 code= error=false",
			},
			turnEnd: "completed: ",
		},
		{
			fixture: fixtures[1],
			counts: map[events.Type]int{events.SessionStart: 1, events.UserMessage: 2, events.AssistantMessage: 4, events.ToolResult: 3, events.TurnEnd: 1,
				events.Usage: 4, events.SessionTitle: 2},
			tools: []string{
				"30 read exit=- code=FS_NOT_FOUND error=true", "61 glob exit=- code= error=false",
				"83 read exit=- code= error=false",
			},
			turnEnd: "completed: ",
		},
		{
			fixture: fixtures[2],
			counts: map[events.Type]int{events.SessionStart: 1, events.UserMessage: 2, events.AssistantMessage: 2, events.ToolResult: 2,
				events.TurnEnd: 1, events.Error: 1, events.Usage: 2, events.SessionTitle: 2},
			tools:      []string{"35 read exit=- code= error=false", "54 grep exit=- code= error=false"},
			turnEnd:    "error: Internal server error: upstream model worker unavailable",
			errorEvent: "SERVER: Internal server error: upstream model worker unavailable",
		},
		{
			fixture: fixtures[3],
			counts: map[events.Type]int{events.SessionStart: 1, events.UserMessage: 2, events.AssistantMessage: 6, events.ToolResult: 5, events.TurnEnd: 1,
				events.Usage: 6, events.SessionTitle: 2},
			tools: []string{
				"44 read exit=- code= error=false", "67 read exit=- code= error=false", "110 edit exit=- code= error=false",
				"132 bash exit=0 code= error=false", "153 bash exit=0 code= error=false",
			},
			turnEnd: "completed: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, pos, err := dshlog.ReadFile(tt.path(t))
			if err != nil {
				t.Fatal(err)
			}
			if pos.Line != int64(tt.lines) {
				t.Errorf("read %d lines, want %d", pos.Line, tt.lines)
			}
			requireValid(t, evs)
			counts := map[events.Type]int{}
			var tools []string
			var turnEnd, errorEvent string
			humans := 0
			for _, e := range evs {
				counts[e.Type]++
				if e.SessionID != tt.session || !strings.HasPrefix(e.Workspace, "/home/dev/") {
					t.Errorf("%s: session %q workspace %q", e.ID, e.SessionID, e.Workspace)
				}
				switch e.Type {
				case events.UserMessage:
					if p := payload[events.MessagePayload](t, e); p.Source == "user" {
						humans++
					}
				case events.ToolResult:
					p := payload[events.ToolResultPayload](t, e)
					exit := "-"
					if p.ExitCode != nil {
						exit = fmt.Sprint(*p.ExitCode)
					}
					tools = append(tools, fmt.Sprintf("%s %s exit=%s code=%s error=%v", seqOf(e.ID), p.Tool, exit, p.ErrorCode, p.IsError))
				case events.TurnEnd:
					p := payload[events.TurnEndPayload](t, e)
					turnEnd = p.Reason + ": " + p.Error
				case events.Error:
					p := payload[events.ErrorPayload](t, e)
					errorEvent = p.Code + ": " + p.Message
				}
			}
			if fmt.Sprint(counts) != fmt.Sprint(tt.counts) {
				t.Errorf("counts %v\n want %v", counts, tt.counts)
			}
			if humans != 1 {
				t.Errorf("%d human messages, want 1", humans)
			}
			if !slices.Equal(tools, tt.tools) {
				t.Errorf("tool results\n got %q\nwant %q", tools, tt.tools)
			}
			if turnEnd != tt.turnEnd || errorEvent != tt.errorEvent {
				t.Errorf("turn_end %q, error %q; want %q, %q", turnEnd, errorEvent, tt.turnEnd, tt.errorEvent)
			}
			if evs[0].ID != "dsh:"+tt.session+":session_start" || evs[0].ID != dshlog.SessionStartID(tt.session) {
				t.Errorf("session_start id %q", evs[0].ID)
			}
		})
	}
}

func TestMapS1Details(t *testing.T) {
	evs, _, err := dshlog.ReadFile(fixtures[0].path(t))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]events.Event{}
	for _, e := range evs {
		byID[e.ID] = e
	}
	sid := fixtures[0].session
	start := payload[events.SessionStartPayload](t, byID[dshlog.SessionStartID(sid)])
	if start.Primary == nil || !*start.Primary || byID[dshlog.SessionStartID(sid)].Time != time.UnixMilli(1795977438816).UTC() {
		t.Errorf("session_start %+v at %s", start, byID[dshlog.SessionStartID(sid)].Time)
	}
	user := payload[events.MessagePayload](t, byID[events.DSHID(sid, 7, "")])
	if user.Source != "user" || user.Turn != 1 || !strings.HasPrefix(user.Text, "The invoice tests are failing") {
		t.Errorf("user message %+v", user)
	}
	if p := payload[events.MessagePayload](t, byID[events.DSHID(sid, 8, "")]); p.Source != "plugin" {
		t.Errorf("runtime context message %+v", p)
	}
	tool := byID[events.DSHID(sid, 45, "")]
	p := payload[events.ToolResultPayload](t, tool)
	if p.CallID != "call_00_X1Uju24rIiKUTbQPxzRiUuMh" || p.Command != "python3 -m unittest -v" || p.Turn != 1 ||
		!strings.HasSuffix(p.Output, "[exit code: 1]") || tool.Time != time.UnixMilli(1795977440003).UTC() {
		t.Errorf("failing bash %+v at %s", p, tool.Time)
	}
	edit := payload[events.ToolResultPayload](t, byID[events.DSHID(sid, 132, "")])
	if !strings.HasPrefix(edit.Command, `{"file_path":"/home/dev/invoice-utils/invoice.py"`) {
		t.Errorf("edit command %q: want the call's arguments", edit.Command)
	}
	reply := payload[events.MessagePayload](t, byID[events.DSHID(sid, 43, "")])
	if reply.Text != "I'll run the test suite first to see what fails." ||
		reply.Reasoning != "The user reports failing tests. First reproduce: run the unittest suite in the workspace and look at the failure output." {
		t.Errorf("assistant message %+v: the text blocks as text, the reasoning block as reasoning", reply)
	}
	// Step 4 reasoned and called bash without a word: reasoning, no text.
	if quiet := payload[events.MessagePayload](t, byID[events.DSHID(sid, 153, "")]); quiet.Text != "" ||
		quiet.Reasoning != "Edit applied. Re-run the same test command to verify." || quiet.Turn != 1 || quiet.MessageID == "" {
		t.Errorf("reasoning-only step %+v", quiet)
	}
}

// TestMapRows covers the rules the fixtures do not show.
func TestMapRows(t *testing.T) {
	const header = `{"type":"session","version":0,"id":"session-x","createdAt":1795977438816,"cwd":"/home/dev/app","delegationDepth":0}`
	call := func(seq int, id, name, args string) string {
		a, _ := json.Marshal(args)
		return fmt.Sprintf(`{"type":"tool/call","seq":%d,"time":1795977438900,"data":{"turn":2,"step":1,"callId":%q,"name":%q,"arguments":%s}}`, seq, id, name, a)
	}
	result := func(seq int, id, text string, isError bool, extra string) string {
		tx, _ := json.Marshal(text)
		return fmt.Sprintf(`{"type":"tool/result","seq":%d,"time":1795977439000,"data":{"turn":2,"step":1,"message":{"role":"user","source":{"kind":"tool","callId":%q},`+
			`"content":[{"type":"tool-result","toolCallId":%q,"content":[{"type":"text","text":%s}],"isError":%v}]}%s}}`, seq, id, id, tx, isError, extra)
	}
	long := strings.Repeat("é log line\n", 3000) + "FAIL: TestThing\n[exit code: 2]"
	tests := []struct {
		name  string
		lines []string
		want  []string // "id type payload"
	}{
		{"subagent", []string{strings.Replace(header, `"delegationDepth":0`, `"delegationDepth":1`, 1)},
			[]string{`dsh:session-x:session_start session_start {"primary":false}`}},
		{"bash exit 2 with isError false", []string{header, call(1, "c1", "bash", `{"command":"go test ./..."}`), result(2, "c1", "ok\n[exit code: 2]\n", false, "")},
			[]string{`dsh:session-x:2 tool_result {"call_id":"c1","tool":"bash","command":"go test ./...","exit_code":2,"is_error":true,"output":"ok\n[exit code: 2]\n","turn":2}`}},
		{"bash error without marker", []string{header, call(1, "c1", "bash", `{"command":"sleep 999"}`), result(2, "c1", "Error: timed out", true, "")},
			[]string{`dsh:session-x:2 tool_result {"call_id":"c1","tool":"bash","command":"sleep 999","is_error":true,"output":"Error: timed out","turn":2}`}},
		{"result without its call", []string{header, result(2, "c9", "done", false, `,"error":{"name":"X","code":"X_CODE"}`)},
			[]string{`dsh:session-x:2 tool_result {"call_id":"c9","tool":"unknown","is_error":false,"error_code":"X_CODE","output":"done","turn":2}`}},
		{"recall and other sources skipped", []string{header,
			`{"type":"user/message","seq":1,"time":1795977438900,"data":{"role":"user","content":[{"type":"text","text":"memo"}],"source":{"kind":"plugin","plugin":"mull","form":"recall"}}}`,
			`{"type":"user/message","seq":2,"time":1795977438900,"data":{"role":"user","content":[{"type":"text","text":"sub"}],"source":{"kind":"subagent"}}}`,
			`{"type":"user/message","seq":3,"time":1795977438900,"data":{"role":"user","content":[{"type":"image"}],"source":{"kind":"user"}}}`},
			nil},
		{"turns, aborts, max tokens, unknown kinds", []string{header,
			`{"type":"turn/start","seq":1,"time":1795977438900,"data":{"turn":3}}`,
			`{"type":"user/message","seq":2,"time":1795977438900,"data":{"role":"user","content":[{"type":"text","text":"go"}],"source":{"kind":"user"}}}`,
			`{"type":"turn/end","seq":3,"time":1795977438900,"data":{"turn":3,"reason":{"kind":"aborted","reason":"user pressed esc"}}}`,
			`{"type":"turn/end","seq":4,"time":1795977438900,"data":{"turn":4,"reason":{"kind":"max-tokens"}}}`,
			`{"type":"turn/end","seq":5,"time":1795977438900,"data":{"turn":5,"reason":{"kind":"disposed"}}}`,
			`{"type":"turn/end","seq":6,"time":1795977438900,"data":{"turn":6,"reason":{"kind":"error","error":{"message":"boom","code":"UNKNOWN"}}}}`},
			[]string{
				`dsh:session-x:2 user_message {"text":"go","source":"user","turn":3}`,
				`dsh:session-x:3 turn_end {"turn":3,"reason":"aborted","error":"user pressed esc"}`,
				`dsh:session-x:4 turn_end {"turn":4,"reason":"max-tokens"}`,
				`dsh:session-x:5 turn_end {"turn":5,"reason":"aborted"}`,
				`dsh:session-x:6 turn_end {"turn":6,"reason":"error","error":"boom"}`,
				`dsh:session-x:6:error error {"message":"boom","code":"UNKNOWN","turn":6}`,
			}},
		{"retries are not errors; compaction; feedback", []string{header,
			`{"type":"llm/retry","seq":1,"time":1795977438900,"data":{"retry":1,"failure":{"message":"503","code":"SERVER"}}}`,
			`{"type":"assistant/chunk","seq":2,"time":1795977438900,"data":{"chunk":{"type":"finish","reason":{"kind":"error","failure":{"message":"503","code":"SERVER"}}}}}`,
			`{"type":"text-chunks","seq0":3,"time0":1795977438900,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"]}}`,
			`{"type":"compaction/end","seq":5,"time":1795977438900,"data":{"summary":"…"}}`,
			`{"type":"compaction/end","seq":6,"time":1795977438900,"data":{"error":{"message":"failed"}}}`,
			`{"type":"feedback/record","seq":7,"time":1795977438900,"data":{"text":"the diff view is unreadable"}}`,
			`{"type":"feedback/record","seq":8,"time":1795977438900,"data":{"text":"👍 great fix"}}`,
			`{"type":"some/new-type","seq":9,"time":1795977438900,"data":{"x":1}}`,
			`{"type":"feedback/record","seq":10,"time":1795977438900,"data":{"text":"rated","rating":"down"}}`},
			[]string{
				`dsh:session-x:5 compaction_end {}`,
				// /feedback is free text: no rating is guessed from its words
				`dsh:session-x:7 feedback {"rating":"none","text":"the diff view is unreadable"}`,
				`dsh:session-x:8 feedback {"rating":"none","text":"👍 great fix"}`,
				`dsh:session-x:10 feedback {"rating":"down","text":"rated"}`,
			}},
		{"reasoning: tool calls only give nothing; over-long reasoning is cut to MaxReasoning", []string{
			`{"type":"session","version":0,"id":"session-x","createdAt":1795977438816,"cwd":"/home/dev/app","delegationDepth":0}`,
			`{"type":"assistant/message","seq":1,"time":1795977438900,"data":{"turn":1,"message":{"id":"m0","role":"assistant","content":[{"type":"tool-call","id":"c","name":"bash","arguments":"{}"}]}}}`,
			`{"type":"assistant/message","seq":2,"time":1795977438900,"data":{"turn":1,"message":{"id":"m1","role":"assistant","content":[{"type":"reasoning","text":"  "},{"type":"tool-call","id":"c","name":"bash","arguments":"{}"}]}}}`,
			`{"type":"assistant/message","seq":3,"time":1795977438900,"data":{"turn":1,"message":{"id":"m2","role":"assistant","content":[{"type":"reasoning","text":"` +
				strings.Repeat("h", 4000) + strings.Repeat("t", 6000) + `"}]}}}`},
			[]string{
				`dsh:session-x:3 assistant_message {"text":"","turn":1,"message_id":"m2","reasoning":"` + strings.Repeat("h", 2041) + `\n…[1833 bytes cut]…\n` + strings.Repeat("h", 126) + strings.Repeat("t", 6000) + `"}`,
			}},
		{"a subagent names its parent and skips the rows it inherited", []string{
			`{"type":"session","version":0,"id":"session-child","createdAt":1795977438816,"cwd":"/home/dev/x","parentSession":"session-parent","origin":"subagent","delegationDepth":1,"seedLength":2}`,
			`{"type":"user/message","seq":0,"time":1795977438900,"data":{"role":"user","content":[{"type":"text","text":"the parent's prompt"}],"source":{"kind":"user"}}}`,
			`{"type":"assistant/message","seq":1,"time":1795977438900,"data":{"turn":1,"message":{"id":"m0","role":"assistant","content":[{"type":"text","text":"the parent's answer"}]}}}`,
			`{"type":"assistant/message","seq":2,"time":1795977438900,"data":{"turn":1,"message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"the child's answer"}]}}}`},
			[]string{
				`dsh:session-child:session_start session_start {"primary":false,"parent":"session-parent"}`,
				`dsh:session-child:2 assistant_message {"text":"the child's answer","turn":1,"message_id":"m1"}`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := dshlog.NewMapper(dshlog.State{})
			var got []string
			for i, l := range tt.lines {
				evs, err := m.Map([]byte(l))
				if err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				requireValid(t, evs)
				for _, e := range evs {
					if e.Type != events.SessionStart || len(tt.lines) == 1 || strings.Contains(string(e.Payload), "parent") {
						got = append(got, fmt.Sprintf("%s %s %s", e.ID, e.Type, e.Payload))
					}
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("events\n got %q\nwant %q", got, tt.want)
			}
		})
	}

	t.Run("long output keeps head and tail", func(t *testing.T) {
		m := dshlog.NewMapper(dshlog.State{})
		var evs []events.Event
		for _, l := range []string{header, call(1, "c1", "bash", `{"command":"go test"}`), result(2, "c1", long, false, "")} {
			out, err := m.Map([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, out...)
		}
		requireValid(t, evs)
		p := payload[events.ToolResultPayload](t, evs[1])
		if len(p.Output) > events.MaxOutput || !utf8.ValidString(p.Output) || !strings.HasPrefix(p.Output, "é log line") ||
			!strings.HasSuffix(p.Output, "FAIL: TestThing\n[exit code: 2]") || !strings.Contains(p.Output, "bytes cut]") {
			t.Errorf("output of %d bytes: %q…%q", len(p.Output), p.Output[:40], p.Output[len(p.Output)-40:])
		}
		if p.ExitCode == nil || *p.ExitCode != 2 || !p.IsError {
			t.Errorf("exit %v error %v", p.ExitCode, p.IsError)
		}
	})
}

func TestMapErrors(t *testing.T) {
	const header = `{"type":"session","version":0,"id":"session-x","createdAt":1795977438816,"cwd":"/home/dev/app","delegationDepth":0}`
	m := dshlog.NewMapper(dshlog.State{})
	if _, err := m.Map([]byte(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}`)); err == nil || !strings.Contains(err.Error(), "not a DSH session log") {
		t.Fatalf("headerless log: %v", err)
	}
	if _, err := m.Map([]byte(header)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Map([]byte(`{"type":"tool/call","seq":1,"time":1,"data":{"callId":"c1","name":"bash","arguments":"{}"}}`)); err != nil {
		t.Fatal(err)
	}
	before := m.State
	for _, bad := range []string{`{"type":"tool/result","seq":2,`, `{"type":"tool/result","seq":2,"time":1,"data":{"message":{"content":"nope"}}}`} {
		_, err := m.Map([]byte(bad))
		if err == nil {
			t.Fatalf("%s accepted", bad)
		}
		if m.LastSeq != before.LastSeq || len(m.Calls) != 1 {
			t.Fatalf("a refused line changed the state: %+v", m.State)
		}
	}
	_, err := m.Map([]byte(`{"type":"tool/result","seq":2,"time":1,"data":{"message":{"content":"nope"}}}`))
	if !strings.Contains(err.Error(), "seq 2 tool/result: data:") {
		t.Errorf("error %q does not say which row", err)
	}
}

// TestStateResumes: a Mapper restored from a saved State (as JSON) at any
// line maps the rest exactly as one pass does, tool calls waiting for their
// results included.
func TestStateResumes(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			lines := splitLines(f.plainBytes(t))
			whole := mapAll(t, dshlog.NewMapper(dshlog.State{}), lines)
			for i := range lines {
				m := dshlog.NewMapper(dshlog.State{})
				first := mapAll(t, m, lines[:i])
				saved, err := json.Marshal(m.State)
				if err != nil {
					t.Fatal(err)
				}
				var st dshlog.State
				if err := json.Unmarshal(saved, &st); err != nil {
					t.Fatal(err)
				}
				rest := mapAll(t, dshlog.NewMapper(st), lines[i:])
				if got := append(first, rest...); fmt.Sprint(got) != fmt.Sprint(whole) {
					t.Fatalf("resumed at line %d: events differ", i+1)
				}
			}
		})
	}
}

func mapAll(t *testing.T, m *dshlog.Mapper, lines [][]byte) []events.Event {
	t.Helper()
	var out []events.Event
	for _, l := range lines {
		evs, err := m.Map(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, evs...)
	}
	return out
}

// requireValid checks every event passes mull's validation, as ingest will.
func requireValid(t *testing.T, evs []events.Event) {
	t.Helper()
	now := time.UnixMilli(1795977438816).Add(time.Hour)
	seen := map[string]bool{}
	for i := range evs {
		if err := events.Validate(&evs[i], now); err != nil {
			t.Errorf("%s: %v", evs[i].ID, err)
		}
		if seen[evs[i].ID] {
			t.Errorf("id %s twice", evs[i].ID)
		}
		seen[evs[i].ID] = true
	}
}

func payload[T any](t *testing.T, e events.Event) T {
	t.Helper()
	var p T
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatalf("%s: %v", e.ID, err)
	}
	return p
}

// seqOf is the seq in an id "dsh:<session>:<seq>".
func seqOf(id string) string {
	parts := strings.Split(id, ":")
	return parts[2]
}
