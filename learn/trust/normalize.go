package trust

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Normalize is the text the gate stores: NFKC, with every invisible
// character dropped and line ends unified to "\n".
//
// Dropped: every format character (Unicode category Cf: zero-width spaces
// and joiners, the soft hyphen, bidi embeddings, overrides, isolates and
// marks, tag characters, the BOM, the word joiner and invisible operators),
// control characters other than tab and newline, variation selectors and the
// Hangul fillers. All of Cf, not a list of it: the category is "invisible,
// affects layout", a prompt has no layout to affect, and each one is a way
// to split a word past a check or hide a payload (tag characters spell
// ASCII invisibly). The price: emoji ZWJ sequences fall apart into their
// parts and Persian or Indic text loses its ZWNJ shaping hints; both stay
// readable.
//
// Kept: the full-width ASCII forms (U+FF01–U+FF5E). NFKC would turn
// Chinese punctuation "：，（）！？" into ASCII and change every Chinese
// memory as stored; the check folds them instead (foldWidth), so "ｉｇｎｏｒｅ"
// is still caught.
func Normalize(text string) string {
	text = nfkcKeepWidth(text)
	var b strings.Builder
	b.Grow(len(text))
	for i, r := range text {
		switch {
		case r == '\r':
			if !strings.HasPrefix(text[i+1:], "\n") {
				b.WriteByte('\n')
			}
		case r == '\u0085' || r == '\u2028' || r == '\u2029':
			b.WriteByte('\n')
		case r == '\v' || r == '\f':
			b.WriteByte(' ')
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case invisible(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// invisible reports the runes Normalize drops.
func invisible(r rune) bool {
	switch {
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return true
	case r < 0xa0:
		return false
	case unicode.Is(unicode.Cf, r):
		return true
	case unicode.Is(unicode.Variation_Selector, r):
		return true
	}
	switch r {
	case '\u034f', '\u115f', '\u1160', '\u3164', '\uffa0', '\u180e', '\ufffc':
		return true
	}
	return false
}

// nfkcKeepWidth applies NFKC to everything but the full-width ASCII forms.
func nfkcKeepWidth(s string) string {
	if norm.NFKC.IsNormalString(s) {
		return s
	}
	if !strings.ContainsFunc(s, isWide) {
		return norm.NFKC.String(s)
	}
	var b strings.Builder
	for s != "" {
		i := strings.IndexFunc(s, isWide)
		if i < 0 {
			b.WriteString(norm.NFKC.String(s))
			break
		}
		b.WriteString(norm.NFKC.String(s[:i]))
		j := strings.IndexFunc(s[i:], func(r rune) bool { return !isWide(r) })
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		b.WriteString(s[i : i+j])
		s = s[i+j:]
	}
	return b.String()
}

func isWide(r rune) bool { return r >= 0xFF01 && r <= 0xFF5E }
