package dshlog

import (
	"strconv"
	"unicode/utf8"
)

// cut shortens s to at most max bytes, keeping its head and, larger, its
// tail (where a failing command's error and exit code are), with a marker
// saying how much went. Cuts fall on UTF-8 boundaries.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	// Size the marker for the largest count, then fill in the real one.
	room := max - len(marker(len(s)))
	if room < 0 {
		return ""
	}
	head := room / 4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (room - head)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + marker(tail-head) + s[tail:]
}

func marker(n int) string { return "\n…[" + strconv.Itoa(n) + " bytes cut]…\n" }
