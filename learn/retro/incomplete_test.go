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
