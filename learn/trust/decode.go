package trust

import (
	"encoding/base64"
	"encoding/hex"
	"html"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// decoded returns the text hidden in base64 and hex runs of s: each run
// of at least 16 such characters that decodes to valid UTF-8 that is mostly
// printable (an instruction spelt in base64 does; a commit hash, a UUID or
// a random key does not), and, up to depth, what those decode to in turn.
func decoded(s string, depth int) []string {
	if depth == 0 {
		return nil
	}
	var out []string
	for _, run := range runs(s, 32) {
		t, ok := fromBase64(run)
		if !ok && len(run)%2 == 0 && isHex(run) {
			if b, err := hex.DecodeString(run); err == nil && printable(string(b)) {
				t, ok = string(b), true
			}
		}
		if ok {
			out = append(out, t)
			out = append(out, decoded(t, depth-1)...)
		}
	}
	return out
}

// runs finds up to most runs of at least 16 base64 characters (either
// alphabet), with their padding.
func runs(s string, most int) []string {
	var out []string
	for i := 0; i < len(s) && len(out) < most; {
		if !isBase64Byte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isBase64Byte(s[j]) {
			j++
		}
		for k := 0; k < 2 && j < len(s) && s[j] == '='; k++ {
			j++
		}
		if j-i >= 16 {
			out = append(out, s[i:j])
		}
		i = j
	}
	return out
}

func isBase64Byte(c byte) bool {
	return isWordByte(c) || c == '+' || c == '/' || c == '-'
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; !('0' <= s[i] && s[i] <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func fromBase64(run string) (string, bool) {
	raw := strings.TrimRight(run, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(raw, "-_") {
		if strings.ContainsAny(raw, "+/") {
			return "", false
		}
		enc = base64.RawURLEncoding
	}
	// A run's tail may be cut mid-quantum; decode the longest whole prefix.
	if len(raw)%4 == 1 {
		raw = raw[:len(raw)-1]
	}
	b, err := enc.DecodeString(raw)
	if err != nil || !printable(string(b)) {
		return "", false
	}
	return string(b), true
}

// printable: at least 8 runes, valid UTF-8, at least 90% letters, marks,
// digits, punctuation, symbols or spaces.
func printable(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) < 8 {
		return false
	}
	good, all := 0, 0
	for _, r := range s {
		all++
		if unicode.IsPrint(r) || r == '\n' || r == '\t' {
			good++
		}
	}
	return good*10 >= all*9
}

// The readings below undo the ways a text can show a reader (or a model)
// something other than its bytes spell. Each is for the instruction check
// only: what is stored is still the normalized text.

// untag reads Unicode tag characters (U+E0020–U+E007E, ASCII shifted by
// U+E0000 and invisible when shown) in place as the ASCII they spell. A
// line break marks where a hidden run starts and ends, so the hidden text
// is read as words of its own ("note" + tags "you are now…" does not fuse
// into "noteyou"), and a role line it spells starts a line as it would to
// a model. ok is false when text has no tag character.
func untag(text string) (string, bool) {
	i := strings.IndexFunc(text, isTag)
	if i < 0 {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(text))
	b.WriteString(text[:i])
	in := false
	for _, r := range text[i:] {
		switch {
		case isTag(r):
			if !in {
				b.WriteByte('\n')
				in = true
			}
			b.WriteRune(r - 0xE0000)
		case r >= 0xE0000 && r <= 0xE007F: // language tag, cancel tag
		default:
			if in {
				b.WriteByte('\n')
				in = false
			}
			b.WriteRune(r)
		}
	}
	return b.String(), true
}

func isTag(r rune) bool { return r >= 0xE0020 && r <= 0xE007E }

// unreverse reads the text after each right-to-left override (U+202E) in
// the order it is shown: reversed, up to the pop (U+202C), the next
// override or the line's end. "\u202esnoitcurtsni suoiverp erongi" is
// shown, and so read by whoever looks at it, as "ignore previous
// instructions". ok is false when text has no override.
func unreverse(text string) (string, bool) {
	i := strings.IndexRune(text, '\u202e')
	if i < 0 {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(text))
	b.WriteString(text[:i])
	for _, seg := range strings.Split(text[i+len("\u202e"):], "\u202e") {
		end := strings.IndexAny(seg, "\u202c\n")
		if end < 0 {
			end = len(seg)
		}
		r := []rune(seg[:end])
		slices.Reverse(r)
		b.WriteString(string(r))
		b.WriteString(seg[end:])
	}
	return b.String(), true
}

// unescape undoes HTML character references ("&#105;gnore", "&lt;") and
// %-escapes ("%69gnore"), twice at most for a double encoding. Unlike
// url.QueryUnescape it is lenient: a stray "50%" elsewhere in the text
// does not keep the valid escapes from being read. ok is false when
// nothing changed.
func unescape(s string) (string, bool) {
	out := s
	for range 2 {
		next := out
		if strings.IndexByte(next, '&') >= 0 {
			next = html.UnescapeString(next)
		}
		if strings.IndexByte(next, '%') >= 0 {
			next = unpercent(next)
		}
		if next == out {
			break
		}
		out = next
	}
	return out, out != s
}

func unpercent(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHexByte(s[i+1]) && isHexByte(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

func isHexByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'f'
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}

// unleet reads digits and symbols inside words as the letters they stand
// in for: "1gn0r3 pr3v10us 1nstruct10ns" is "ignore previous
// instructions". Only a word that holds a letter and is no quantity is
// read so ("404", "2026", "400k", "10ms" stay); a word of letters and digits that means something else
// ("sha256", "v1") reads as nonsense, which no pattern matches. ok is
// false when no word changed.
func unleet(s string) (string, bool) {
	var b []byte
	for i := 0; i < len(s); {
		if !isLeetWordByte(s[i]) {
			i++
			continue
		}
		j, letter, leet := i, false, false
		for ; j < len(s) && isLeetWordByte(s[j]); j++ {
			c := s[j] | 0x20
			letter = letter || 'a' <= c && c <= 'z'
			leet = leet || leetOf(s[j]) != 0
		}
		if letter && leet && !quantity(s[i:j]) {
			if b == nil {
				b = []byte(s)
			}
			for k := i; k < j; k++ {
				if l := leetOf(s[k]); l != 0 {
					b[k] = l
				}
			}
		}
		i = j
	}
	if b == nil {
		return s, false
	}
	return string(b), true
}

// quantity: digits and a unit, "400k", "10ms", "64gb", "2fa", "3rd".
func quantity(w string) bool {
	i := 0
	for i < len(w) && '0' <= w[i] && w[i] <= '9' {
		i++
	}
	if i == 0 {
		return false
	}
	switch strings.ToLower(w[i:]) {
	case "k", "m", "g", "t", "b", "s", "h", "d", "w", "x", "ms", "us", "ns", "kb", "mb", "gb", "tb",
		"kib", "mib", "gib", "px", "em", "pt", "fa", "st", "nd", "rd", "th", "min", "hz", "khz", "mhz", "ghz", "fps", "bit":
		return true
	}
	return false
}

func isLeetWordByte(c byte) bool {
	return isWordByte(c) && c != '_' || c == '@' || c == '$'
}

func leetOf(c byte) byte {
	switch c {
	case '0':
		return 'o'
	case '1':
		return 'i'
	case '3':
		return 'e'
	case '4', '@':
		return 'a'
	case '5', '$':
		return 's'
	case '7':
		return 't'
	}
	return 0
}
