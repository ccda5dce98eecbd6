package retro

import (
	"strings"
	"testing"
)

func TestNoteIncomplete(t *testing.T) {
	for _, tt := range []struct {
		incomplete bool
		want       string
	}{
		{false, "user: fix it"},
		{true, IncompleteNote + "user: fix it"},
	} {
		if got := NoteIncomplete("user: fix it", tt.incomplete); got != tt.want {
			t.Errorf("NoteIncomplete(_, %t) = %q, want %q", tt.incomplete, got, tt.want)
		}
	}
	if !strings.Contains(IncompleteNote, "missing") || strings.ContainsAny(IncompleteNote, "/\\") {
		t.Errorf("the note must say events are missing and carry no path: %q", IncompleteNote)
	}
}

// The note comes out of the excerpt's own bound: note and excerpt together
// stay within MaxChars.
func TestCapsWithNoteKeepsTheBound(t *testing.T) {
	var in Input
	for i := range 200 {
		in.Transcript = append(in.Transcript, Message{Role: "user", Text: strings.Repeat("x", 40) + string(rune('a'+i%26))})
	}
	caps := Caps{Transcript: 200}
	for _, incomplete := range []bool{false, true} {
		got := NoteIncomplete(BuildExcerpt(in, CapsWithNote(caps, incomplete)), incomplete)
		if n := len([]rune(got)); n > DefaultCaps.MaxChars || n < DefaultCaps.MaxChars-100 {
			t.Errorf("incomplete %t: %d characters, want just under %d", incomplete, n, DefaultCaps.MaxChars)
		}
	}
}
