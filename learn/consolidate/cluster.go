package consolidate

import (
	"cmp"
	"slices"
	"time"

	"github.com/mullhq/mull/learn/memory"
)

// Cluster is a group of 2+ live memories of one kind and one workspace
// that look like near-duplicates: a candidate for one merge call, which the
// model may still decline.
type Cluster struct {
	Kind memory.Kind `json:"kind"`
	IDs  []int64     `json:"ids"` // ascending
}

// ClusterOptions tune candidate finding; zero fields take defaults.
type ClusterOptions struct {
	// Threshold is the least Jaccard similarity of two memories' shingle
	// sets for them to cluster. Defaults to 0.5.
	Threshold float64
	// Shingle is the number of words in a shingle. Defaults to 1: memories
	// are a sentence or two, and word pairs make a reworded duplicate look
	// unrelated ("use pnpm not npm" and "pnpm, not npm, is used" share one
	// pair of words out of seven).
	Shingle int
	// Hashes is the length of a MinHash signature. Defaults to 96.
	Hashes int
	// Bands is the number of LSH bands the signature is cut into, of
	// Hashes/Bands rows each (a remainder is unused; more bands than
	// hashes is one row each). Defaults to 32: with 3 rows, a pair at
	// similarity 0.5 becomes a candidate with probability 0.986, one at 0.2
	// with 0.23 (and is then refused by the exact check). Lower Threshold
	// wants more bands or fewer rows.
	Bands int
}

// The defaults and limits of clustering.
const (
	DefaultThreshold = 0.5
	DefaultShingle   = 1
	DefaultHashes    = 96
	DefaultBands     = 32
	// MaxClusterSize caps one cluster, so one merge line is asked to keep
	// the facts of at most this many memories.
	MaxClusterSize = 12
	// maxBucketPairs bounds the pairs checked within one LSH bucket: each
	// member is compared to the next maxBucketPairs members only, so a
	// bucket of many short texts cannot make the work quadratic.
	maxBucketPairs = 64
	// indexBits bounds the memories of one workspace and kind that LSH
	// reads (16,777,216); more are cut off, as no workspace comes close.
	indexBits = 24
)

func (o ClusterOptions) withDefaults() ClusterOptions {
	if o.Threshold <= 0 {
		o.Threshold = DefaultThreshold
	}
	o.Shingle = cmp.Or(max(o.Shingle, 0), DefaultShingle)
	o.Hashes = cmp.Or(max(o.Hashes, 0), DefaultHashes)
	o.Bands = min(cmp.Or(max(o.Bands, 0), DefaultBands), o.Hashes)
	return o
}

// Clusters finds candidate near-duplicate groups among ms without
// comparing every pair: MinHash signatures over normalized word shingles
// and LSH banding propose candidate pairs, each candidate is confirmed by
// the exact Jaccard similarity of the two shingle sets (>= Threshold), and
// union-find joins confirmed pairs into groups. Texts equal once normalized
// (memory.Normalize) always cluster. Only live memories (valid at now, not
// quarantined) are read, and only memories of the same Kind and Workspace
// cluster. Only clusters holding at least one memory with ID > since are
// returned: since is the watermark of the last run, and an unchanged
// cluster was already offered then (0 offers everything). A group larger
// than MaxClusterSize is split into near-equal pieces, in normalized-text
// order so that the closest texts stay together. The result does not depend
// on the order of ms: clusters are sorted by their smallest ID.
func Clusters(ms []memory.Memory, since int64, now time.Time, o ClusterOptions) []Cluster {
	o = o.withDefaults()
	type group struct {
		workspace string
		kind      memory.Kind
	}
	groups := map[group][]memory.Memory{}
	for _, m := range ms {
		if live(m, now) {
			g := group{m.Workspace, m.Kind}
			groups[g] = append(groups[g], m)
		}
	}
	var out []Cluster
	for _, g := range groups {
		// IDs are unique in a store; the text only makes a bad input's
		// order deterministic too.
		slices.SortFunc(g, func(a, b memory.Memory) int {
			return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Text, b.Text))
		})
		for _, c := range clusterGroup(g, o) {
			if c.IDs[len(c.IDs)-1] > since {
				out = append(out, c)
			}
		}
	}
	slices.SortFunc(out, func(a, b Cluster) int {
		return cmp.Or(cmp.Compare(a.IDs[0], b.IDs[0]), cmp.Compare(a.Kind, b.Kind))
	})
	return out
}

// clusterGroup clusters memories of one workspace and kind, sorted by ID.
func clusterGroup(ms []memory.Memory, o ClusterOptions) []Cluster {
	uf := newUnionFind(len(ms))
	norm := make([]string, len(ms))
	first := map[string]int{}
	var reps []int
	for i, m := range ms {
		norm[i] = memory.Normalize(m.Text)
		key := norm[i]
		if key == "" {
			key = "\x00" + m.Text
		}
		if j, ok := first[key]; ok {
			uf.union(j, i)
			continue
		}
		first[key] = i
		reps = append(reps, i)
	}
	for len(reps) > 0 && reps[len(reps)-1] >= 1<<indexBits {
		reps = reps[:len(reps)-1]
	}
	candidates(norm, reps, uf, o)
	members := map[int][]memory.Memory{}
	var roots []int
	for i, m := range ms {
		r := uf.find(i)
		if len(members[r]) == 0 {
			roots = append(roots, r)
		}
		members[r] = append(members[r], m)
	}
	var out []Cluster
	for _, r := range roots {
		if len(members[r]) > 1 {
			out = append(out, split(members[r], norm, ms)...)
		}
	}
	return out
}

// candidates joins, in uf, the pairs among reps (one memory per distinct
// normalized text) that share an LSH bucket in some band and are similar
// enough. A bucket entry is one uint64, the band's key in the high bits
// and the memory's index in the low indexBits, so a band is bucketed by
// one plain sort; two bands that differ only in the dropped key bits share
// a bucket by chance, which costs one exact check.
func candidates(norm []string, reps []int, uf *unionFind, o ClusterOptions) {
	rows := o.Hashes / o.Bands
	seed := seeds(rows * o.Bands)
	sh := make([][]uint64, len(norm))
	sig := make([][]uint64, len(norm))
	for _, i := range reps {
		sh[i] = shingles(norm[i], o.Shingle)
		if len(sh[i]) > 0 {
			sig[i] = signature(sh[i], seed)
		}
	}
	const mask = 1<<indexBits - 1
	entries := make([]uint64, 0, len(reps))
	for b := range o.Bands {
		entries = entries[:0]
		for _, i := range reps {
			if sig[i] != nil {
				entries = append(entries, bandKey(sig[i][b*rows:(b+1)*rows])&^mask|uint64(i))
			}
		}
		slices.Sort(entries)
		for lo := 0; lo < len(entries); {
			hi := lo + 1
			for hi < len(entries) && entries[hi]&^mask == entries[lo]&^mask {
				hi++
			}
			for x := lo; x < hi; x++ {
				for y := x + 1; y < hi && y <= x+maxBucketPairs; y++ {
					i, j := int(entries[x]&mask), int(entries[y]&mask)
					if uf.find(i) != uf.find(j) && jaccard(sh[i], sh[j]) >= o.Threshold {
						uf.union(i, j)
					}
				}
			}
			lo = hi
		}
	}
}

// split cuts a group into clusters of at most MaxClusterSize: near-equal
// contiguous pieces in normalized-text order (ties by ID), so that exact
// duplicates and texts that start alike stay together and no piece is a
// single memory.
func split(group []memory.Memory, norm []string, ms []memory.Memory) []Cluster {
	kind := group[0].Kind
	if len(group) <= MaxClusterSize {
		return []Cluster{{Kind: kind, IDs: ids(group)}}
	}
	text := map[int64]string{}
	for i, m := range ms {
		text[m.ID] = norm[i]
	}
	slices.SortFunc(group, func(a, b memory.Memory) int {
		return cmp.Or(cmp.Compare(text[a.ID], text[b.ID]), cmp.Compare(a.ID, b.ID))
	})
	k := (len(group) + MaxClusterSize - 1) / MaxClusterSize
	out := make([]Cluster, 0, k)
	for p := range k {
		out = append(out, Cluster{Kind: kind, IDs: ids(group[p*len(group)/k : (p+1)*len(group)/k])})
	}
	return out
}

// ids are the memories' IDs, ascending.
func ids(ms []memory.Memory) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	slices.Sort(out)
	return out
}

// unionFind is a disjoint-set forest whose root is always the smallest
// index, so that the result does not depend on the order of unions.
type unionFind struct{ parent []int }

func newUnionFind(n int) *unionFind {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return &unionFind{p}
}

func (u *unionFind) find(i int) int {
	for u.parent[i] != i {
		u.parent[i] = u.parent[u.parent[i]]
		i = u.parent[i]
	}
	return i
}

func (u *unionFind) union(i, j int) {
	ri, rj := u.find(i), u.find(j)
	switch {
	case ri < rj:
		u.parent[rj] = ri
	case rj < ri:
		u.parent[ri] = rj
	}
}
