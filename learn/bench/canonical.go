package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// canonicalJSON is the seed's canonicalJson (src/benchmark.ts): object
// keys sorted, arrays in order, null for a missing value, strings and
// numbers as JavaScript's JSON.stringify writes them. The hashes a case or
// a snapshot is known by are sha256 over it, so the same material hashes
// the same in mull as in the seed.
//
// v is first marshalled by encoding/json (so struct tags and omitempty
// decide which keys exist, as undefined does in the seed), then rewritten
// canonically.
func canonicalJSON(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := writeCanonical(&b, tree); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeCanonical(b *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		fmt.Fprint(b, t)
	case json.Number:
		// Only integers reach here from mull's types (versions); a
		// decimal would need JavaScript's number formatting.
		if _, err := t.Int64(); err != nil {
			return fmt.Errorf("canonical JSON: non-integer number %s", t)
		}
		b.WriteString(t.String())
	case string:
		quoteJS(b, t)
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			quoteJS(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, t[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("canonical JSON: unexpected %T", v)
	}
	return nil
}

// quoteJS writes s as JSON.stringify does: only ", \ and the control
// characters are escaped (\b \f \n \r \t short, the rest \u00xx), where
// Go's encoder would also escape <, >, & and U+2028/U+2029.
func quoteJS(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// compareUTF16 orders keys as JavaScript's sort does: by UTF-16 code
// units, which differs from byte order only for a character beyond U+FFFF
// (a surrogate pair, 0xD800..) against one in U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if (ra >= 0x10000) == (rb >= 0x10000) {
				return int(ra - rb)
			}
			return int(firstUnit(ra) - firstUnit(rb))
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// firstUnit is r's first UTF-16 unit: r itself, or its high surrogate.
func firstUnit(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
