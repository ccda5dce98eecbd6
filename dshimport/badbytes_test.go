package dshimport

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestBadEventsAreLeftOutWithTheirPlace: an event mull would refuse (a NUL
// in a message, a row with invalid UTF-8, a tool name over the cap) is left
// out whole and reported with its file, line and byte offset; the rest of
// the session is stored, and nothing with the bad bytes reaches the store.
func TestBadEventsAreLeftOutWithTheirPlace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		home := homeWith(t, s4)
		lines := bytes.SplitAfter(readBytes(t, s4.in(home)), []byte("\n"))
		spoil := func(line int, old, new string) {
			t.Helper()
			if !bytes.Contains(lines[line-1], []byte(old)) {
				t.Fatalf("line %d has no %q", line, old)
			}
			lines[line-1] = bytes.Replace(lines[line-1], []byte(old), []byte(new), 1)
		}
		spoil(9, "In this repo", `In this\u0000 repo`)                                   // user/message seq 7
		spoil(58, `"text":"`, "\"text\":\"\xff")                                         // assistant/message seq 108: invalid UTF-8
		spoil(42, `"name":"read"`, `"name":"`+strings.Repeat("r", events.MaxName+1)+`"`) // its tool's result
		writeLog(t, s4.in(home), bytes.Join(lines, nil))
		offset := func(line int) int64 {
			n := 0
			for _, l := range lines[:line-1] {
				n += len(l)
			}
			return int64(n)
		}

		all := allEvents(t, s4)
		var resultLine int
		var resultID string
		for _, e := range all {
			var p events.ToolResultPayload
			if e.Type == events.ToolResult && json.Unmarshal(e.Payload, &p) == nil && p.CallID == "call_00_v8MdqnY461d9pfmrQfmH6rBe" {
				resultID = e.ID
			}
		}
		for i, l := range lines {
			if resultID != "" && bytes.Contains(l, []byte(`"type":"tool/result"`)) && bytes.Contains(l, []byte("call_00_v8MdqnY461d9pfmrQfmH6rBe")) {
				resultLine = i + 1
			}
		}
		if resultID == "" || resultLine == 0 {
			t.Fatal("the fixture's read call has no result")
		}
		var wantOut []LeftOut
		var kept []events.Event
		for _, e := range all {
			switch {
			case strings.HasSuffix(e.ID, ":7"):
				wantOut = append(wantOut, LeftOut{Line: 9, Offset: offset(9), ID: e.ID, Error: "payload.text: contains a NUL"})
			case strings.HasSuffix(e.ID, ":108"), strings.HasSuffix(e.ID, ":108:usage"): // the message and its usage
				wantOut = append(wantOut, LeftOut{Line: 58, Offset: offset(58), ID: e.ID, Error: "not valid UTF-8"})
			case e.ID == resultID:
				wantOut = append(wantOut, LeftOut{Line: int64(resultLine), Offset: offset(resultLine), ID: e.ID, Error: "payload.tool: longer than 128 bytes"})
			default:
				kept = append(kept, e)
			}
		}
		if len(wantOut) < 3 {
			t.Fatalf("the spoiled rows map to %d events; want at least 3: %+v", len(wantOut), wantOut)
		}

		ing := newFakeIngest()
		sum := scanOK(t, newImporter(s, home, ing))
		if sum.Skipped != len(wantOut) || len(sum.LeftOut) != len(wantOut) || len(sum.Errors) != 0 {
			t.Fatalf("summary %+v; want %d left out", sum, len(wantOut))
		}
		for i, want := range wantOut {
			got := sum.LeftOut[i]
			if got.Path != s4.in(home) || got.Line != want.Line || got.Offset != want.Offset || got.ID != want.ID ||
				!strings.Contains(got.Error, want.Error) || !strings.HasPrefix(got.String(), s4.in(home)+": line ") {
				t.Errorf("left out %+v; want %+v", got, want)
			}
		}
		var stored []string
		for id, e := range ing.stored {
			stored = append(stored, id)
			if strings.ContainsRune(string(e.Payload), 0) || strings.Contains(string(e.Payload), `\u0000`) || !json.Valid(e.Payload) {
				t.Errorf("event %s stored with bad bytes: %q", id, e.Payload)
			}
		}
		var want []string
		for _, e := range kept {
			want = append(want, e.ID)
		}
		slices.Sort(stored)
		slices.Sort(want)
		if !slices.Equal(stored, want) {
			t.Errorf("stored %d events, want %d:\n got %v\nwant %v", len(stored), len(want), stored, want)
		}
	})
}
