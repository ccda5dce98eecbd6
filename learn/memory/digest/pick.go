package digest

import (
	"cmp"
	"slices"
)

// cand is one entry that may go into a section.
type cand struct {
	line  string
	score float64
	// index is the entry's place in recorded order ("file order").
	index int
	stale bool
	// key is the duplicate key (memory.Normalize); "" for non-memories.
	key string
	// cost is what the entry takes of its section's quota; 0 means its
	// line and a newline.
	cost int
}

// size is what c takes of its section's quota.
func (c cand) size() int {
	if c.cost > 0 {
		return c.cost
	}
	return runes(c.line) + 1
}

// room is what a section has used so far: entries and quota characters.
type room struct{ entries, chars int }

// pick is the seed's selectMemoryLines: sort by score, highest first (the
// later entry wins a tie), stop at maxLines, skip — do not stop at — any
// entry that would overflow the quota (a section's first entry is always
// taken), then put the chosen back in recorded order with stale entries
// last. Duplicates of an entry already shown (this section or an earlier
// one, this library or the one before) are skipped and not counted as
// omitted: they are on screen.
func pick(cands []cand, r *room, maxLines, quota int, seen map[string]bool) (chosen []cand, omitted int) {
	order := slices.Clone(cands)
	slices.SortStableFunc(order, func(a, b cand) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(b.index, a.index))
	})
	for _, c := range order {
		if c.key != "" && seen[c.key] {
			continue
		}
		n := c.size()
		if r.entries >= maxLines || (quota > 0 && r.entries > 0 && r.chars+n > quota) {
			omitted++
			continue
		}
		chosen = append(chosen, c)
		r.entries++
		r.chars += n
		if c.key != "" {
			seen[c.key] = true
		}
	}
	slices.SortStableFunc(chosen, func(a, b cand) int {
		return cmp.Or(cmpBool(a.stale, b.stale), cmp.Compare(a.index, b.index))
	})
	return chosen, omitted
}

func lines(cs []cand) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.line
	}
	return out
}
