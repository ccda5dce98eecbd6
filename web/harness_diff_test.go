package web

import (
	"strings"
	"testing"
)

// lineDiff keeps common lines, marks the rest deleted or inserted, and
// applying its result to a gives b.
func TestLineDiff(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		want       string // one line per diff line: op then text
	}{
		{"equal", "a\nb", "a\nb", " a\n b"},
		{"both empty", "", "", ""},
		{"from empty", "", "x\ny", "+x\n+y"},
		{"to empty", "x\ny\n", "", "-x\n-y"},
		{"final newline ignored", "a\n", "a", " a"},
		{"one changed line", "a\nb\nc", "a\nB\nc", " a\n-b\n+B\n c"},
		{"insert in the middle", "a\nc", "a\nb\nc", " a\n+b\n c"},
		{"delete at the start", "a\nb\nc", "b\nc", "-a\n b\n c"},
		{"move", "a\nb\nc\nd", "b\nc\na\nd", "-a\n b\n c\n+a\n d"},
		{"interleaved", "1\nx\n2\ny\n3", "1\n2\n3\nz", " 1\n-x\n 2\n-y\n 3\n+z"},
		{"html is text", "<b>", "<i>", "-<b>\n+<i>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := lineDiff(tc.a, tc.b)
			var got []string
			var from, to []string
			for _, l := range d {
				got = append(got, string(l.Op)+l.Text)
				if l.Op != '+' {
					from = append(from, l.Text)
				}
				if l.Op != '-' {
					to = append(to, l.Text)
				}
			}
			if g := strings.Join(got, "\n"); g != tc.want {
				t.Errorf("diff = %q, want %q", g, tc.want)
			}
			if strings.Join(from, "\n") != strings.Join(splitLines(tc.a), "\n") || strings.Join(to, "\n") != strings.Join(splitLines(tc.b), "\n") {
				t.Errorf("diff does not rebuild its sides: %q", got)
			}
		})
	}
}

// Past the table's bound the middle is all deleted then all inserted:
// still a diff that rebuilds both sides.
func TestLineDiffBounded(t *testing.T) {
	var a, b strings.Builder
	for i := range 2100 {
		a.WriteString("a" + string(rune('0'+i%10)) + "\n")
		b.WriteString("b" + string(rune('0'+i%10)) + "\n")
	}
	d := lineDiff("same\n"+a.String()+"end", "same\n"+b.String()+"end")
	ins, del := diffStats(d)
	if ins != 2100 || del != 2100 || d[0].Op != ' ' || d[len(d)-1].Text != "end" || d[1].Op != '-' || d[2101].Op != '+' {
		t.Fatalf("bounded diff: %d ins, %d del, first %+v", ins, del, d[:2])
	}
}
