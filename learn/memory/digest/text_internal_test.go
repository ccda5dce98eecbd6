package digest

import (
	"strings"
	"testing"
)

func TestWrapperFitsItsShare(t *testing.T) {
	if n := runes(header) + runes(footer); n > 260 {
		t.Fatalf("header and footer take %d runes, more than the 260 config reserves", n)
	}
	for _, s := range []string{header, footer, globalHead, proposalTail, shrunkLine} {
		if strings.ContainsAny(s, "{}") {
			t.Errorf("fixed text %q holds a brace", s)
		}
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		in              string
		quota, maxLines int
		want            string
	}{
		{"short", 700, 40, "short"},
		{"line one\nline two\nline three", 16, 0, "…\nline three"}, // whole lines when it can
		{"- aaaaaaaaaaaaaaaaaa", 8, 0, "…\n- aaa…"},                // within quota, "…" included, the line's start kept
		{"1\n2\n3\n4\n5", 0, 3, "…\n4\n5"},                         // at most maxLines lines
		{"记录一\n记录二\n记录三", 6, 0, "…\n记录三"},
	}
	for _, tt := range tests {
		got := cut(tt.in, tt.quota, tt.maxLines)
		if got != tt.want || (tt.quota > 0 && runes(got) > tt.quota) {
			t.Errorf("cut(%q, %d, %d) = %q, want %q", tt.in, tt.quota, tt.maxLines, got, tt.want)
		}
	}
}
