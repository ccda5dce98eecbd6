package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Normalize is the key duplicates are compared by: full-width forms folded
// to ASCII, lower case, punctuation (ASCII and CJK) and whitespace collapsed
// to single spaces, trimmed. "Use pnpm, not npm." and "use  PNPM not npm" are
// the same memory; so are "用中文，简洁" and "用中文 简洁".
func Normalize(text string) string {
	var b strings.Builder
	gap := false
	for _, r := range FoldWidth(text) {
		if unicode.IsPunct(r) || unicode.IsSpace(r) || unicode.IsControl(r) {
			gap = b.Len() > 0
			continue
		}
		if gap {
			b.WriteByte(' ')
			gap = false
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Duplicate reports whether two texts say the same thing: equal, or equal
// once normalized.
func Duplicate(a, b string) bool {
	if a == b {
		return true
	}
	na := Normalize(a)
	return na != "" && na == Normalize(b)
}

// Matches is the seed's rule for finding the memory a SUPERSEDE line or a
// forget names: the normalized texts are equal, or one contains the other
// and the contained one has at least 6 characters. A needle under 4
// characters matches nothing, so "/forget a" cannot wipe the library.
func Matches(needle, text string) bool {
	n, t := Normalize(needle), Normalize(text)
	nl, tl := utf8.RuneCountInString(n), utf8.RuneCountInString(t)
	switch {
	case nl < 4 || tl == 0:
		return false
	case n == t:
		return true
	case nl >= 6 && strings.Contains(t, n):
		return true
	}
	return tl >= 6 && strings.Contains(n, t)
}
