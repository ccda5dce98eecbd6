package trust

import (
	"encoding/base64"
	"encoding/hex"
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
