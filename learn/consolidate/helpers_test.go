package consolidate_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
)

var (
	now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	src = consolidate.Source{Workspace: "/home/dev/proj", RunID: "run-1", JobID: 42}
)

func mem(id int64, kind memory.Kind, text string) memory.Memory {
	return memory.Memory{ID: id, Workspace: src.Workspace, Kind: kind, Text: text, Origin: memory.OriginTool,
		RecordedAt: now.Add(-48 * time.Hour)}
}

func byID(ms ...memory.Memory) map[int64]memory.Memory {
	out := map[int64]memory.Memory{}
	for _, m := range ms {
		out[m.ID] = m
	}
	return out
}

// synthetic is a library of n memories, about a quarter of them in planted
// groups of 2 to 4 near-duplicates (one or two words changed, dropped,
// added or moved, case and punctuation changed), the rest unrelated. The
// words come from a vocabulary with a shared core of common domain words,
// so unrelated memories overlap a little, as real ones do. groups[i] are
// the IDs of planted group i.
func synthetic(n int, seed uint64) (ms []memory.Memory, groups [][]int64) {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	vocab := make([]string, 4000)
	syll := []string{"ka", "lo", "mi", "ru", "te", "vo", "zan", "pre", "sto", "gri", "fel", "nup", "dax", "qui", "bor"}
	for i := range vocab {
		vocab[i] = syll[i%15] + syll[(i/15)%15] + syll[(i/225)%15] + fmt.Sprint(i/3375)
	}
	common := []string{"test", "build", "repo", "deploy", "config", "server", "cache", "branch", "docker", "queue",
		"the", "in", "to", "with", "before", "after", "when", "use", "run", "always"}
	word := func() string {
		if r.IntN(3) == 0 {
			return common[r.IntN(len(common))]
		}
		return vocab[r.IntN(len(vocab))]
	}
	sentence := func() []string {
		w := make([]string, 9+r.IntN(6))
		for i := range w {
			w[i] = word()
		}
		return w
	}
	kinds := []memory.Kind{memory.Fact, memory.Lesson, memory.Method, memory.Resource, memory.Preference}
	ids := r.Perm(n)
	next := 0
	add := func(kind memory.Kind, w []string) int64 {
		id := int64(ids[next] + 1)
		next++
		ms = append(ms, mem(id, kind, strings.Join(w, " ")))
		return id
	}
	for next+4 <= n/4 {
		kind := kinds[r.IntN(len(kinds))]
		base := sentence()
		g := []int64{add(kind, base)}
		for range 1 + r.IntN(3) {
			g = append(g, add(kind, vary(r, base, word)))
		}
		groups = append(groups, g)
	}
	for next < n {
		add(kinds[r.IntN(len(kinds))], sentence())
	}
	return ms, groups
}

// vary makes a near-duplicate of base by one or two small edits.
func vary(r *rand.Rand, base []string, word func() string) []string {
	w := append([]string(nil), base...)
	for range 1 + r.IntN(2) {
		switch i := r.IntN(len(w)); r.IntN(4) {
		case 0:
			w[i] = word()
		case 1:
			w = append(w[:i], w[i+1:]...)
		case 2:
			w = append(w[:i], append([]string{word()}, w[i:]...)...)
		default:
			j := r.IntN(len(w))
			w[i], w[j] = w[j], w[i]
		}
	}
	w[0] = strings.ToUpper(w[0][:1]) + w[0][1:]
	w[len(w)-1] += "."
	return w
}
