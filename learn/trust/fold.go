package trust

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/unicode/norm"
)

// FoldWidth maps full-width ASCII (U+FF01–U+FF5E) to ASCII and the
// ideographic space to a space, so "ｒｍ　－ｒｆ" reads as "rm -rf".
func FoldWidth(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0xFF01 && r <= 0xFF5E:
			return r - 0xFEE0
		case r == 0x3000:
			return ' '
		}
		return r
	}, s)
}

// fold is the text the instruction check reads (never stored): normalized,
// full-width folded, and every non-ASCII rune that Unicode's confusables
// table (UTS #39, via github.com/mtibben/confusables) maps to ASCII replaced
// by it, so Cyrillic "іgnоrе" reads as "ignore". ASCII itself is left as
// it is: the table's skeleton would also turn "m" into "rn" and "I" into
// "l", which no pattern expects. Accents and other combining marks are
// dropped too ("ìgnórè", Zalgo text), outside Chinese.
func fold(normalized string) string {
	s := FoldWidth(normalized)
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			b.WriteRune(r)
			continue
		}
		b.WriteString(confusable(r))
	}
	return b.String()
}

// skeletons caches each rune's ASCII fold: the table's lookup goes through
// NFD twice, too slow to repeat for every rune of every render.
var skeletons sync.Map // rune → string

func confusable(r rune) string {
	if v, ok := skeletons.Load(r); ok {
		return v.(string)
	}
	out := string(r)
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me):
		// A combining mark left on its own (NFKC composes what it can):
		// the accents piled on "instruć́́tions", Zalgo text, strikethrough.
		out = ""
	case !unicode.Is(unicode.Han, r):
		if sk := skeleton(out); sk != "" {
			out = sk
			// The table folds capital I-likes to "l"; a capital stays a
			// capital I so "ІGNORE" still reads as "IGNORE".
			if sk == "l" && unicode.IsUpper(r) {
				out = "I"
			}
		} else if bare := unmarked(out); bare != out {
			// An accented letter the table keeps ("ì", "ó", "ú"): read it
			// without its marks, then through the table again.
			if sk := skeleton(bare); sk != "" {
				out = sk
			} else if isASCII(bare) && bare != "" {
				out = bare
			}
		}
	}
	skeletons.Store(r, out)
	return out
}

// skeleton is the confusables table's ASCII reading of s, or "" if it has
// none.
func skeleton(s string) string {
	if sk := confusables.Skeleton(s); sk != s && isASCII(sk) {
		return sk
	}
	return ""
}

// unmarked is s decomposed (NFD) without its combining marks: "ì" is "i".
func unmarked(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.In(r, unicode.Mn, unicode.Me) {
			return -1
		}
		return r
	}, norm.NFD.String(s))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
