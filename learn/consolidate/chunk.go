package consolidate

import (
	"unicode/utf8"

	"github.com/mullhq/mull/learn/memory"
)

// Chunks packs clusters, in order, into chunks whose total member text is
// at most maxChars characters (runes): one chunk is one merge call, and the
// cap keeps each call's input, and so its answer, small enough to be cheap
// and to finish. A cluster larger than maxChars is a chunk alone, rather
// than being dropped; maxChars <= 0 puts everything in one chunk. Members
// missing from byID count as empty.
func Chunks(cs []Cluster, byID map[int64]memory.Memory, maxChars int) [][]Cluster {
	var out [][]Cluster
	var cur []Cluster
	size := 0
	for _, c := range cs {
		n := clusterChars(c, byID)
		if len(cur) > 0 && maxChars > 0 && size+n > maxChars {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, c)
		size += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// clusterChars is the length of a cluster's member texts, in runes.
func clusterChars(c Cluster, byID map[int64]memory.Memory) int {
	n := 0
	for _, id := range c.IDs {
		n += utf8.RuneCountInString(byID[id].Text)
	}
	return n
}
