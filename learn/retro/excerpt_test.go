package retro_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/retro"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }

// session has n of each kind of evidence, item i at minute i.
func session(n int) retro.Input {
	var in retro.Input
	for i := range n {
		code := i % 3
		in.Errors = append(in.Errors, retro.Error{Time: at(i), Message: fmt.Sprintf("error %02d", i), Turn: i + 1})
		in.ToolFailures = append(in.ToolFailures, retro.ToolFailure{Time: at(i), Tool: "bash",
			Command: fmt.Sprintf("make step%02d", i), ExitCode: &code, Output: "boom"})
		in.Feedback = append(in.Feedback, retro.Feedback{Time: at(i), Text: fmt.Sprintf("bad answer %02d", i)})
		in.Transcript = append(in.Transcript, retro.Message{Time: at(i), Role: "user", Text: fmt.Sprintf("msg %02d", i)})
	}
	return in
}

func section(t *testing.T, excerpt, title string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(excerpt, "## "+title)
	if !ok {
		return nil
	}
	body, _, _ := strings.Cut(rest, "\n## ")
	var items []string
	for _, l := range strings.Split(strings.TrimSpace(body), "\n")[1:] { // after the heading line
		if strings.HasPrefix(l, "- ") {
			items = append(items, l)
		} else if len(items) > 0 {
			items[len(items)-1] += "\n" + l // an item's later lines
		}
	}
	return items
}

func TestExcerptCaps(t *testing.T) {
	caps := retro.Caps{MaxChars: 100000}
	got := retro.BuildExcerpt(session(20), caps)
	tests := []struct {
		title       string
		n           int
		first, last string
	}{
		{"ERRORS (15 of 20", 15, "error 05", "error 19"},
		{"FAILED TOOL CALLS (8 of 20", 8, "make step12", "make step19"},
		{"USER FEEDBACK (thumbs down) (20 of 20", 20, "bad answer 00", "bad answer 19"}, // the seed takes every 👎
		{"LAST TRANSCRIPT ENTRIES (12 of 20", 12, "msg 08", "msg 19"},
	}
	for _, tt := range tests {
		lines := section(t, got, tt.title)
		if len(lines) != tt.n {
			t.Errorf("%s: %d lines, want %d:\n%s", tt.title, len(lines), tt.n, got)
			continue
		}
		if !strings.Contains(lines[0], tt.first) || !strings.Contains(lines[len(lines)-1], tt.last) {
			t.Errorf("%s: from %q to %q, want %q to %q (newest last)", tt.title, lines[0], lines[len(lines)-1], tt.first, tt.last)
		}
	}
	if !strings.Contains(got, "- [2026-11-29T10:19:00Z] bash exit 1: make step19\n  | => boom\n") {
		t.Errorf("tool failure line lacks its exit code or command:\n%s", got)
	}
	if !strings.Contains(got, "- [2026-11-29T10:19:00Z] turn 20 error 19") {
		t.Errorf("error line malformed:\n%s", got)
	}
}

func TestExcerptDeterministic(t *testing.T) {
	in := session(20)
	want := retro.BuildExcerpt(in, retro.DefaultCaps)
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		r.Shuffle(len(in.Errors), func(i, j int) { in.Errors[i], in.Errors[j] = in.Errors[j], in.Errors[i] })
		r.Shuffle(len(in.Transcript), func(i, j int) { in.Transcript[i], in.Transcript[j] = in.Transcript[j], in.Transcript[i] })
		if got := retro.BuildExcerpt(in, retro.DefaultCaps); got != want {
			t.Fatalf("shuffled input gave another excerpt:\n%s\nwant:\n%s", got, want)
		}
	}
}

func TestExcerptMaxChars(t *testing.T) {
	in := session(40)
	for i := range in.Transcript {
		in.Transcript[i].Text = strings.Repeat("长", 1000)
	}
	got := retro.BuildExcerpt(in, retro.Caps{})
	if n := utf8.RuneCountInString(got); n > 3500 {
		t.Errorf("excerpt has %d characters, want at most 3500", n)
	}
	if !strings.Contains(got, "长长…") {
		t.Error("long items are not cut with …")
	}
	for _, title := range []string{"USER FEEDBACK (thumbs down) (40 of 40", "ERRORS (15 of 40", "FAILED TOOL CALLS (8 of 40"} {
		if !strings.Contains(got, title) {
			t.Errorf("the transcript should be dropped before %q:\n%s", title, got)
		}
	}
	tr := section(t, got, "LAST TRANSCRIPT ENTRIES")
	if len(tr) == 0 || len(tr) >= 12 || !strings.Contains(tr[len(tr)-1], "10:39:00Z") {
		t.Errorf("transcript kept %q, want its newest few", tr)
	}

	tiny := retro.BuildExcerpt(in, retro.Caps{MaxChars: 50})
	if n := utf8.RuneCountInString(tiny); n > 50 {
		t.Errorf("MaxChars 50 gave %d characters", n)
	}
	if got := retro.BuildExcerpt(retro.Input{}, retro.Caps{}); got != "" {
		t.Errorf("empty input gave %q", got)
	}
}

func TestErrorFocus(t *testing.T) {
	in := session(20)
	in.Errors = in.Errors[:10] // the newest error is at minute 9
	got := retro.ErrorFocus(in, retro.Caps{MaxChars: 100000})
	if !strings.HasPrefix(got, "## ERRORS (10 of 10") {
		t.Errorf("ErrorFocus does not start with the errors:\n%s", got)
	}
	tr := section(t, got, "LAST TRANSCRIPT ENTRIES (10 of 10")
	if len(tr) != 10 || !strings.Contains(tr[len(tr)-1], "msg 09") {
		t.Errorf("transcript should end at the newest error (msg 09): %q", tr)
	}
	tight := retro.ErrorFocus(session(40), retro.Caps{MaxChars: 1200})
	if !strings.Contains(tight, "ERRORS (15 of 40") || !strings.Contains(tight, "USER FEEDBACK (thumbs down) (0 of 40") {
		t.Errorf("ErrorFocus should drop feedback and the transcript before errors:\n%s", tight)
	}
}

func TestFromEvents(t *testing.T) {
	ev := func(i int, typ events.Type, p any) events.Event {
		b, _ := json.Marshal(p)
		return events.Event{ID: fmt.Sprint(i), Type: typ, Time: at(i), Payload: b}
	}
	one := 1
	in := retro.FromEvents([]events.Event{
		ev(1, events.UserMessage, events.MessagePayload{Text: "fix the build"}),
		ev(2, events.ToolResult, events.ToolResultPayload{Tool: "bash", Command: "go build ./...", ExitCode: &one, IsError: true}),
		ev(3, events.ToolResult, events.ToolResultPayload{Tool: "bash", Command: "ls", IsError: false}),
		ev(4, events.Error, events.ErrorPayload{Message: "provider 503", Code: "E503"}),
		ev(5, events.Feedback, events.FeedbackPayload{Rating: "down", Text: "wrong file"}),
		ev(6, events.Feedback, events.FeedbackPayload{Rating: "up"}),
		ev(7, events.AssistantMessage, events.MessagePayload{Text: "done"}),
		{ID: "8", Type: events.Error, Time: at(8), Payload: json.RawMessage(`{"message": 3}`)},
	})
	if len(in.Errors) != 1 || len(in.ToolFailures) != 1 || len(in.Feedback) != 1 || len(in.Transcript) != 2 {
		t.Fatalf("FromEvents = %+v", in)
	}
	if f := in.ToolFailures[0]; f.Command != "go build ./..." || f.ExitCode == nil || *f.ExitCode != 1 {
		t.Errorf("tool failure = %+v", f)
	}
	if in.Transcript[0].Role != "user" || in.Transcript[1].Role != "assistant" {
		t.Errorf("transcript = %+v", in.Transcript)
	}
}
