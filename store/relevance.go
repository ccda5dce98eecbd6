package store

import "math"

// BM25's parameters, at their usual values (FTS5's bm25() uses the same):
// bm25K1 is how fast repeating a term stops adding, bm25B how much a long
// text is discounted.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// textRelevance scores each hit of one indexed search by BM25 over the
// search's terms, computed from what it counted (indexedHit): a term's
// count in the text, the text's length in
// characters against the hits' mean, and the term's rarity among the
// hits (a term most hits contain tells them apart least). Rarity is
// counted among the hits rather than the whole library, which would cost a
// count of the library per search; within one search, the only place the
// scores are compared, it orders terms alike.
func textRelevance(hits []indexedHit, terms int) []float64 {
	out := make([]float64, len(hits))
	if len(hits) == 0 {
		return out
	}
	df := make([]int, terms)
	total := 0
	for _, h := range hits {
		total += h.chars
		for i, c := range h.tf {
			if c > 0 {
				df[i]++
			}
		}
	}
	n := float64(len(hits))
	avg := max(float64(total)/n, 1)
	idf := make([]float64, terms)
	for i, d := range df {
		idf[i] = math.Log(1 + (n-float64(d)+0.5)/(float64(d)+0.5))
	}
	for j, h := range hits {
		norm := bm25K1 * (1 - bm25B + bm25B*float64(h.chars)/avg)
		for i, c := range h.tf {
			tf := float64(c)
			out[j] += idf[i] * tf * (bm25K1 + 1) / (tf + norm)
		}
	}
	return out
}
