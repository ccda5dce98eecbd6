package trust

import (
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

var (
	base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{16,}={0,2}`)
	hexRun    = regexp.MustCompile(`(?:[0-9A-Fa-f]{2}(?:[ :]?)){8,}`)
)

// decoded returns the text hidden in base64 and hex runs of s: each run
// that decodes to valid UTF-8 that is mostly printable (an instruction
// spelt in base64 does; a commit hash, a UUID or a random key does not),
// and, up to depth, what those decode to in turn.
func decoded(s string, depth int) []string {
	if depth == 0 {
		return nil
	}
	var out []string
	for _, run := range base64Run.FindAllString(s, 32) {
		if t, ok := fromBase64(run); ok {
			out = append(out, t)
			out = append(out, decoded(t, depth-1)...)
		}
	}
	for _, run := range hexRun.FindAllString(s, 32) {
		clean := strings.NewReplacer(" ", "", ":", "").Replace(run)
		if b, err := hex.DecodeString(clean[:len(clean)/2*2]); err == nil && printable(string(b)) {
			out = append(out, string(b))
			out = append(out, decoded(string(b), depth-1)...)
		}
	}
	return out
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
