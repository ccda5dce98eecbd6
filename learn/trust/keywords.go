package trust

import (
	"slices"
	"strings"
)

// keywordIndex finds which of many short keywords occur in a text in one
// pass, the job gitleaks gives an Aho-Corasick trie: keywords are bucketed by
// their first two bytes, so each position of the text costs one bit test,
// and a bucket's keywords are compared only where their two bytes occur.
type keywordIndex struct {
	seen    [1 << 16 / 64]uint64
	buckets map[uint16][]keyword
	short   []keyword // keywords of one byte
}

type keyword struct {
	word  string
	rules []int
}

func (x *keywordIndex) add(word string, rule int) {
	if word == "" {
		return
	}
	if len(word) == 1 {
		x.short = addKeyword(x.short, word, rule)
		return
	}
	if x.buckets == nil {
		x.buckets = map[uint16][]keyword{}
	}
	k := uint16(word[0])<<8 | uint16(word[1])
	x.seen[k/64] |= 1 << (k % 64)
	x.buckets[k] = addKeyword(x.buckets[k], word, rule)
}

func addKeyword(ks []keyword, word string, rule int) []keyword {
	for i := range ks {
		if ks[i].word == word {
			ks[i].rules = append(ks[i].rules, rule)
			return ks
		}
	}
	return append(ks, keyword{word: word, rules: []int{rule}})
}

// hit is one keyword occurrence: where it is, how long, and its rules.
type hit struct {
	at, n int
	rules []int
}

// hits returns every occurrence of a keyword in lower (already lower-cased),
// in text order.
func (x *keywordIndex) hits(lower string) []hit {
	var hs []hit
	for _, k := range x.short {
		for i := 0; ; {
			j := strings.Index(lower[i:], k.word)
			if j < 0 {
				break
			}
			hs = append(hs, hit{at: i + j, n: len(k.word), rules: k.rules})
			i += j + 1
		}
	}
	for i := 0; i+1 < len(lower); i++ {
		k := uint16(lower[i])<<8 | uint16(lower[i+1])
		if x.seen[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		for _, kw := range x.buckets[k] {
			if strings.HasPrefix(lower[i:], kw.word) {
				hs = append(hs, hit{at: i, n: len(kw.word), rules: kw.rules})
			}
		}
	}
	slices.SortFunc(hs, func(a, b hit) int { return a.at - b.at })
	return hs
}
