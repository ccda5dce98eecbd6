package consolidate

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/memory"
)

// MinCoverage is the least share of a source's content words a merged line
// must keep: rewording is fine, dropping half a memory is not.
const MinCoverage = 0.6

// The compaction rule of the seed ("every normalized 24-char signature of
// the original must appear") forbids any rewording, which is the point of a
// merge, so a merge is held to its sources' key content instead: the
// tokens whose loss changes what a memory tells the agent.

var (
	// run is a stretch of identifier-like ASCII: a candidate key token. It
	// is found inside other text too, so "端口5433" yields 5433.
	run = regexp.MustCompile(`[A-Za-z0-9_./:\\~$@#+=%?&-]+`)
	// quoted is a quoted or backticked string; a single-quoted one only
	// between word boundaries, so "don't" and "it's" quote nothing.
	quoted = regexp.MustCompile("`([^`\n]{1,80})`" + `|"([^"\n]{1,80})"|“([^”\n]{1,80})”|(?:^|[\s(])'([^'\n]{1,80})'(?:$|[\s.,;:!?)])`)
	// hyphenated is a plain hyphenated word, which may also be written
	// with a space or as one word ("follow-up", "follow up", "followup").
	hyphenated = regexp.MustCompile(`^[a-z]+(?:-[a-z]+)+$`)
)

// notKeys look like identifiers but are prose.
var notKeys = setOf("e.g i.e etc a.m p.m vs and/or")

// KeyContent is what of a text must survive a merge: its salient tokens,
// normalized (lower case, width folded, "--flag" as "-flag", a URL without
// its trailing slash), distinct, in order of appearance. Salient are
// numbers and anything with a digit (ports, versions, sizes), flags (-x,
// --x), paths and URLs, identifiers with _ . / : - or an inner capital
// (memory.New, retro_session, PostgreSQL), and quoted or backticked
// strings.
func KeyContent(text string) []string {
	text = memory.FoldWidth(text)
	var keys []string
	seen := map[string]bool{}
	add := func(k string) {
		if k != "" && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, m := range quoted.FindAllStringSubmatch(text, -1) {
		for _, g := range m[1:] {
			add(strings.Join(strings.Fields(strings.ToLower(g)), " "))
		}
	}
	for _, tok := range run.FindAllString(text, -1) {
		if tok = trimToken(tok); salient(tok) {
			add(normalizeKey(tok))
		}
	}
	return keys
}

// trimToken drops sentence punctuation around a token, keeping the leading
// dashes of a flag and the dots of "./...".
func trimToken(tok string) string {
	tok = strings.TrimLeft(tok, ",;:!?=&")
	tok = strings.TrimRight(tok, ",;:!?=&-")
	if strings.HasSuffix(tok, ".") && !strings.HasSuffix(tok, "...") {
		tok = tok[:len(tok)-1]
	}
	return tok
}

func salient(tok string) bool {
	if tok == "" || strings.Trim(tok, "-.") == "" || notKeys[strings.ToLower(tok)] {
		return false
	}
	switch {
	case strings.ContainsFunc(tok, unicode.IsDigit):
		return true
	case strings.HasPrefix(tok, "-") && len(tok) > 1:
		return true
	case strings.ContainsAny(tok, `_./:\~$@#+=%`):
		return true
	case strings.Contains(strings.Trim(tok, "-"), "-"):
		return true
	}
	for i, r := range tok {
		if i > 0 && unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

func normalizeKey(tok string) string {
	k := strings.ToLower(tok)
	if strings.HasPrefix(k, "--") {
		k = "-" + strings.TrimLeft(k, "-")
	}
	if strings.Contains(k, "://") {
		k = strings.TrimRight(k, "/")
	}
	return k
}

// Missing returns what the sources say that the merged line lacks: each
// source's key content not found in it, then, for a source whose content
// words (non-stopwords of 3+ letters) the line keeps less than MinCoverage
// of, "coverage 0.42 < 0.60 of memory 17". Empty means the merge is
// faithful. Key tokens are matched whole: 5433 is not in 15433, v1.2 is
// not in v1.2.3.
func Missing(merged string, sources []memory.Memory) []string {
	hay := strings.Join(strings.Fields(strings.ToLower(memory.FoldWidth(merged))), " ")
	have := unitSet(merged)
	var missing []string
	seen := map[string]bool{}
	for _, s := range sources {
		for _, k := range KeyContent(s.Text) {
			if !seen[k] && !contains(hay, k) {
				seen[k] = true
				missing = append(missing, k)
			}
		}
		if c, ok := coverage(unitSet(s.Text), have); ok && c < MinCoverage {
			missing = append(missing, fmt.Sprintf("coverage %.2f < %.2f of memory %d", math.Floor(c*100)/100, MinCoverage, s.ID))
		}
	}
	return missing
}

// contains reports whether key occurs in hay as a whole token.
func contains(hay, key string) bool {
	alts := []string{key}
	if hyphenated.MatchString(key) {
		alts = append(alts, strings.ReplaceAll(key, "-", " "), strings.ReplaceAll(key, "-", ""))
	}
	for _, k := range alts {
		for from := 0; ; {
			i := strings.Index(hay[from:], k)
			if i < 0 {
				break
			}
			at := from + i
			if bounded(hay, at, at+len(k)) {
				return true
			}
			from = at + 1
		}
	}
	return false
}

// bounded reports whether hay[i:j] is not part of a longer token: no word
// character before it, and none after it, directly or after a joining
// . - / or : (so "v1.2" is not found in "v1.2.3").
func bounded(hay string, i, j int) bool {
	if r, _ := utf8.DecodeLastRuneInString(hay[:i]); i > 0 && wordRune(r) {
		return false
	}
	if j == len(hay) {
		return true
	}
	r, n := utf8.DecodeRuneInString(hay[j:])
	if wordRune(r) {
		return false
	}
	if strings.ContainsRune(".-/:", r) && j+n < len(hay) {
		next, _ := utf8.DecodeRuneInString(hay[j+n:])
		return !wordRune(next)
	}
	return true
}

func wordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// unitSet is the set of a text's content words for coverage: words of 3+
// runes (or CJK bigrams), stopwords left out.
func unitSet(text string) map[string]bool {
	set := map[string]bool{}
	for _, w := range words(text) {
		if cjk(w) || utf8.RuneCountInString(w) >= 3 && !stopwords[w] {
			set[w] = true
		}
	}
	return set
}

// coverage is the share of src found in have; false when src is empty.
func coverage(src, have map[string]bool) (float64, bool) {
	if len(src) == 0 {
		return 0, false
	}
	n := 0
	for w := range src {
		if have[w] {
			n++
		}
	}
	return float64(n) / float64(len(src)), true
}
