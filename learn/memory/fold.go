package memory

import "github.com/mullhq/mull/learn/trust"

// FoldWidth maps full-width ASCII (U+FF01–U+FF5E) to ASCII and the
// ideographic space to a space, so "ｒｍ　－ｒｆ" reads as "rm -rf". It is
// the trust gate's fold, so duplicates are compared as the gate reads them.
func FoldWidth(s string) string { return trust.FoldWidth(s) }

// jsSpace is JavaScript's \s spelt out for Go's regexp (the seed's patterns
// are JavaScript's), and sp one of them.
const jsSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

const sp = `[` + jsSpace + `]`
