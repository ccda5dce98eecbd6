package consolidate

import (
	"slices"
	"strings"
)

// MinHash is written here rather than imported: the one Go library in
// reach (a 2015 simhash) is unmaintained and solves another problem, and
// MinHash over a few dozen shingles is a page of code. Hashes must be the
// same in every process, so that a run is reproducible and a test is
// stable: hash/maphash is seeded per process, so shingles are hashed with
// FNV-1a and the k hash functions are a SplitMix64 finalizer over the
// shingle hash xor a fixed seed.

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnv1a is the 64-bit FNV-1a hash of s.
func fnv1a(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// mix is SplitMix64's finalizer: a bijection that spreads every input bit
// over the output, so x^seed for different seeds behaves as different hash
// functions.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// seeds returns n fixed seeds, the SplitMix64 sequence from 0.
func seeds(n int) []uint64 {
	s := make([]uint64, n)
	var x uint64
	for i := range s {
		x += 0x9e3779b97f4a7c15
		s[i] = mix(x)
	}
	return s
}

// shingles are the sorted, distinct hashes of the word n-grams (see
// words) of a normalized text; a text of fewer than n words is one
// shingle.
func shingles(norm string, n int) []uint64 {
	w := normalWords(norm)
	if len(w) == 0 {
		return nil
	}
	var out []uint64
	if len(w) < n {
		out = append(out, fnv1a(strings.Join(w, " ")))
	}
	for i := 0; i+n <= len(w); i++ {
		out = append(out, fnv1a(strings.Join(w[i:i+n], " ")))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// signature is the MinHash signature of a shingle set: for each seed, the
// least hash of any shingle. Two sets agree at one position with
// probability equal to their Jaccard similarity.
func signature(sh []uint64, seeds []uint64) []uint64 {
	sig := make([]uint64, len(seeds))
	for i, s := range seeds {
		least := ^uint64(0)
		for _, h := range sh {
			least = min(least, mix(h^s))
		}
		sig[i] = least
	}
	return sig
}

// bandKey hashes one band of a signature into a bucket key.
func bandKey(band []uint64) uint64 {
	h := uint64(fnvOffset)
	for _, v := range band {
		h = mix(h ^ v)
	}
	return h
}

// jaccard is the exact Jaccard similarity of two sorted, distinct sets.
func jaccard(a, b []uint64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	common, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			common++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(common) / float64(len(a)+len(b)-common)
}
