package memory

import (
	"slices"
	"strings"
)

// RelevanceWeight is what the most relevant text of a search adds to a
// hit's score (NormalizeRelevance makes it 1): about two importance
// points, so between hits of like importance, recency and uses the text
// decides, and a memory much more important than another still outranks
// it with a weaker match.
const RelevanceWeight = 2

// NormalizeRelevance scales the raw text relevances of one search's hits
// (the store's BM25, the same on both databases; higher is more relevant)
// to [0, 1], the best 1: the scale differs by query and by corpus, and
// only the order within a search carries meaning. A
// negative raw relevance counts as 0, and all are 0 when none is positive.
func NormalizeRelevance(raw []float64) []float64 {
	out := make([]float64, len(raw))
	best := 0.0
	if len(raw) > 0 {
		best = slices.Max(raw)
	}
	if best <= 0 {
		return out
	}
	for i, r := range raw {
		out[i] = max(r, 0) / best
	}
	return out
}

// TermsMatched counts the terms (normalized, as SearchTerms gives them)
// that the normalized text norm contains.
func TermsMatched(norm string, terms []string) int {
	n := 0
	for _, t := range terms {
		if strings.Contains(norm, t) {
			n++
		}
	}
	return n
}

// SearchScore ranks a search hit: the seed's Score (importance, recency,
// uses), plus one per query term its text contains (the rule search had
// before relevance), plus RelevanceWeight times its normalized relevance
// (NormalizeRelevance), which tells apart texts matching as many terms: a
// rarer term, a term said more often, a shorter text about it.
func SearchScore(seed float64, matched int, relevance float64) float64 {
	return seed + float64(matched) + RelevanceWeight*min(max(relevance, 0), 1)
}
