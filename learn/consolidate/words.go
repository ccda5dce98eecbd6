package consolidate

import (
	"strings"
	"unicode"

	"github.com/mullhq/mull/learn/memory"
)

// stopwords are English words too common to say what a memory is about.
// They are left out of shingles and of the coverage check, so "use pnpm in
// this repo" and "this repo uses pnpm" look alike. Negations (not, never)
// are kept: they flip a memory's meaning.
var stopwords = setOf(`a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each few for from further
had has have having he her here hers him his how i if in into is it its itself just me more most my no nor
of off on once only or other our ours out over own same she should so some such than that the their theirs
them then there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours must may might shall via per`)

func setOf(words string) map[string]bool {
	s := map[string]bool{}
	for _, w := range strings.Fields(words) {
		s[w] = true
	}
	return s
}

// words are the units two texts are compared by: memory.Normalize's words,
// with stopwords left out and a plural s dropped ("uses" is "use"), and a
// run of CJK text as its rune bigrams, because it has no spaces between
// words. A text of stopwords only keeps them all, so it still has words.
func words(text string) []string { return normalWords(memory.Normalize(text)) }

// normalWords is words of a text already normalized.
func normalWords(norm string) []string {
	var out, all []string
	for _, w := range strings.Fields(norm) {
		if cjk(w) {
			out = append(out, bigrams(w)...)
			continue
		}
		w = stem(w)
		all = append(all, w)
		if !stopwords[w] {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

// stem drops a plural or third-person s: crude, but both texts get the same
// treatment, which is all a comparison needs.
func stem(w string) string {
	if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		return w[:len(w)-1]
	}
	return w
}

func cjk(w string) bool {
	for _, r := range w {
		if r >= 0x1100 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			return true
		}
	}
	return false
}

func bigrams(w string) []string {
	r := []rune(w)
	if len(r) < 2 {
		return []string{w}
	}
	out := make([]string, 0, len(r)-1)
	for i := 0; i+1 < len(r); i++ {
		out = append(out, string(r[i:i+2]))
	}
	return out
}
