package memory

import "github.com/mullhq/mull/learn/trust"

// FoldWidth maps full-width ASCII (U+FF01–U+FF5E) to ASCII and the
// ideographic space to a space, so "ｒｍ　－ｒｆ" reads as "rm -rf". It is
// the trust gate's fold, so duplicates are compared as the gate reads them.
func FoldWidth(s string) string { return trust.FoldWidth(s) }

// jsSpace is JavaScript's \s spelt out for Go's regexp (the seed's patterns
// are JavaScript's), the gate's own, and sp one of them.
const jsSpace = trust.JSSpace

const sp = `[` + jsSpace + `]`
