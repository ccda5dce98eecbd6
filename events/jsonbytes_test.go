package events_test

import (
	"strings"
	"testing"

	"github.com/mullhq/mull/events"
)

func TestCheckJSON(t *testing.T) {
	tests := []struct {
		name, doc, path, want string // want "" = fine
	}{
		{"plain", `{"a":"x","b":[1,"y",{"c":"z"}]}`, "", ""},
		{"escapes and a pair", `{"a":"\\u0000 \" \ud83d\ude00 é"}`, "", ""},
		{"NUL escape", `{"a":"x\u0000y"}`, "a", "NUL"},
		{"NUL deep", `{"events":[{"id":"1"},{"id":"2","payload":{"text":"\u0000"}}]}`, "events[1].payload.text", "NUL"},
		{"invalid UTF-8", "{\"events\":[{},{},{},{\"workspace\":\"/a\xff\"}]}", "events[3].workspace", "UTF-8"},
		{"invalid UTF-8 in a key", "{\"a\xc3\":1}", "a\ufffd", "UTF-8"},
		{"NUL in a key", `{"x":{"a\u0000":1}}`, "x.a\x00", "NUL"},
		{"lone high", `{"a":"x\ud800"}`, "a", `\ud800`},
		{"lone high then char", `{"a":"\ud800x"}`, "a", `\ud800`},
		{"lone low", `{"a":["ok","\udc00"]}`, "a[1]", `\udc00`},
		{"two highs", `{"a":"\ud800\ud800\udc00"}`, "a", `\ud800`},
		{"after a number and a bool", `{"n":1,"t":true,"s":"\u0000"}`, "s", "NUL"},
		{"array of arrays", `[[1],["a","\u0000"]]`, "[1][1]", "NUL"},
		{"syntax error left to the decoder", `{"a":`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, problem := events.CheckJSON([]byte(tt.doc), 0)
			if tt.want == "" {
				if problem != "" {
					t.Fatalf("fine document refused at %q: %s", path, problem)
				}
				return
			}
			if path != tt.path || !strings.Contains(problem, tt.want) {
				t.Fatalf("got %q: %q; want %q: …%s…", path, problem, tt.path, tt.want)
			}
		})
	}
}

func TestCheckJSONCapsStrings(t *testing.T) {
	doc := `{"a":"` + strings.Repeat("x", 11) + `","k":"ok"}`
	if path, problem := events.CheckJSON([]byte(doc), 10); path != "a" || !strings.Contains(problem, "longer than 10 bytes") {
		t.Fatalf("got %q: %q", path, problem)
	}
	if _, problem := events.CheckJSON([]byte(doc), 11); problem != "" {
		t.Fatalf("a string at the cap refused: %s", problem)
	}
}
