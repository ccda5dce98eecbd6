package trust

import "strings"

// foldWidth maps full-width ASCII (U+FF01–U+FF5E) to ASCII and the
// ideographic space to a space, so "ｒｍ　－ｒｆ" reads as "rm -rf".
func foldWidth(s string) string {
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
