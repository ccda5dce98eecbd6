package consolidate_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
)

func clusterIDs(cs []consolidate.Cluster) [][]int64 {
	out := [][]int64{}
	for _, c := range cs {
		out = append(out, c.IDs)
	}
	return out
}

func TestClustersExactDuplicates(t *testing.T) {
	ms := []memory.Memory{
		mem(1, memory.Fact, "Use pnpm, not npm."),
		mem(2, memory.Fact, "the CI runs on Postgres 16"),
		mem(3, memory.Fact, "use  PNPM not npm"),
		mem(4, memory.Fact, "ＵＳＥ　ｐｎｐｍ，ｎｏｔ　ｎｐｍ！"),
		mem(5, memory.Fact, "..."),
		mem(6, memory.Fact, "..."),
		mem(7, memory.Fact, "!!!"),
	}
	got := consolidate.Clusters(ms, 0, now, consolidate.ClusterOptions{})
	want := []consolidate.Cluster{{Kind: memory.Fact, IDs: []int64{1, 3, 4}}, {Kind: memory.Fact, IDs: []int64{5, 6}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Clusters = %+v, want %+v", got, want)
	}
}

func TestClustersSimilarity(t *testing.T) {
	tests := []struct {
		a, b string
		opt  consolidate.ClusterOptions
		want bool
	}{
		{"use pnpm not npm in this repo", "This repo uses pnpm, not npm.", consolidate.ClusterOptions{}, true},
		{"postgres listens on port 5433 in dev", "in dev, postgres listens on port 5433", consolidate.ClusterOptions{}, true},
		// 7 of 9 content words shared: 0.78.
		{"flaky queue test: rerun alone with race detector and count one", "flaky queue test: rerun alone with race detector and fresh schema", consolidate.ClusterOptions{}, true},
		// 4 of 6: 0.67.
		{"alpha beta gamma delta epsilon", "alpha beta gamma delta zeta", consolidate.ClusterOptions{}, true},
		// 2 of 6: 0.33.
		{"alpha beta gamma delta", "alpha beta epsilon zeta", consolidate.ClusterOptions{}, false},
		// 3 of 5: 0.6, under a stricter threshold.
		{"alpha beta gamma delta", "alpha beta gamma zeta", consolidate.ClusterOptions{}, true},
		{"alpha beta gamma delta", "alpha beta gamma zeta", consolidate.ClusterOptions{Threshold: 0.8}, false},
		{"the repo uses pnpm", "the CI runs on Postgres 16", consolidate.ClusterOptions{}, false},
		// Stopwords do not make texts alike.
		{"the build is in the cache", "the deploy is in the queue", consolidate.ClusterOptions{}, false},
		// CJK is compared by rune bigrams: 5 of 7.
		{"用中文回答，保持简洁", "用中文回答 简洁", consolidate.ClusterOptions{}, true},
		{"用中文回答", "部署前先跑测试", consolidate.ClusterOptions{}, false},
		// Word pairs instead of words: the reworded pnpm pair no longer matches.
		{"use pnpm not npm in this repo", "this repo: npm is out, pnpm is in", consolidate.ClusterOptions{}, true},
		{"use pnpm not npm in this repo", "this repo: npm is out, pnpm is in", consolidate.ClusterOptions{Shingle: 2}, false},
		{"alpha beta gamma delta epsilon zeta eta", "alpha beta gamma delta epsilon zeta theta", consolidate.ClusterOptions{Shingle: 2}, true},
	}
	for _, tt := range tests {
		ms := []memory.Memory{mem(1, memory.Lesson, tt.a), mem(2, memory.Lesson, tt.b)}
		got := len(consolidate.Clusters(ms, 0, now, tt.opt)) == 1
		if got != tt.want {
			t.Errorf("%q ~ %q (%+v): clustered %v, want %v", tt.a, tt.b, tt.opt, got, tt.want)
		}
	}
}

func TestClustersOnlyLiveSameKindSameWorkspace(t *testing.T) {
	const text = "postgres listens on port 5433 in dev"
	invalid := mem(3, memory.Fact, text)
	invalid.InvalidAt = now.Add(-time.Hour)
	quarantined := mem(4, memory.Fact, text)
	quarantined.Quarantined = true
	future := mem(5, memory.Fact, text)
	future.RecordedAt = now.Add(time.Hour)
	other := mem(6, memory.Fact, text)
	other.Workspace = "/home/dev/other"
	ms := []memory.Memory{mem(1, memory.Fact, text), mem(2, memory.Lesson, text), invalid, quarantined, future, other,
		mem(7, memory.Method, text)}
	if got := consolidate.Clusters(ms, 0, now, consolidate.ClusterOptions{}); len(got) != 0 {
		t.Errorf("Clusters = %+v, want none", got)
	}
	ms = append(ms, mem(8, memory.Lesson, "In dev, Postgres listens on port 5433."))
	want := []consolidate.Cluster{{Kind: memory.Lesson, IDs: []int64{2, 8}}}
	if got := consolidate.Clusters(ms, 0, now, consolidate.ClusterOptions{}); !reflect.DeepEqual(got, want) {
		t.Errorf("Clusters = %+v, want %+v", got, want)
	}
}

func TestClustersSince(t *testing.T) {
	ms := []memory.Memory{
		mem(1, memory.Fact, "the repo uses pnpm"), mem(2, memory.Fact, "The repo uses pnpm."),
		mem(3, memory.Fact, "ci runs postgres 16"), mem(4, memory.Fact, "CI runs Postgres 16"),
		mem(5, memory.Fact, "deploys go through fly.io"), mem(9, memory.Fact, "Deploys go through fly.io!"),
	}
	tests := []struct {
		since int64
		want  [][]int64
	}{
		{0, [][]int64{{1, 2}, {3, 4}, {5, 9}}},
		{2, [][]int64{{3, 4}, {5, 9}}},
		{3, [][]int64{{3, 4}, {5, 9}}},
		{4, [][]int64{{5, 9}}},
		{8, [][]int64{{5, 9}}},
		{9, [][]int64{}},
	}
	for _, tt := range tests {
		if got := clusterIDs(consolidate.Clusters(ms, tt.since, now, consolidate.ClusterOptions{})); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("since %d: Clusters = %v, want %v", tt.since, got, tt.want)
		}
	}
}

func TestClustersDeterministic(t *testing.T) {
	ms, _ := synthetic(1000, 7)
	want := consolidate.Clusters(ms, 0, now, consolidate.ClusterOptions{})
	r := rand.New(rand.NewPCG(1, 2))
	for range 2 {
		shuffled := append([]memory.Memory(nil), ms...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := consolidate.Clusters(shuffled, 0, now, consolidate.ClusterOptions{}); !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffled input gave %d clusters, want the same %d", len(got), len(want))
		}
	}
	for i := 1; i < len(want); i++ {
		if want[i-1].IDs[0] >= want[i].IDs[0] {
			t.Fatalf("clusters not sorted by smallest ID: %v then %v", want[i-1].IDs, want[i].IDs)
		}
	}
}

func TestClustersSplitsLargeGroups(t *testing.T) {
	var ms []memory.Memory
	for i := range 25 {
		ms = append(ms, mem(int64(100-i), memory.Fact, fmt.Sprintf("%sthe repo uses pnpm%s", []string{"", "  "}[i%2], []string{".", "!", ""}[i%3])))
	}
	got := consolidate.Clusters(ms, 0, now, consolidate.ClusterOptions{})
	if len(got) != 3 {
		t.Fatalf("25 duplicates gave %d clusters, want 3: %v", len(got), clusterIDs(got))
	}
	seen := map[int64]bool{}
	for _, c := range got {
		if len(c.IDs) < 8 || len(c.IDs) > consolidate.MaxClusterSize {
			t.Errorf("piece of %d members, want 8 or 9", len(c.IDs))
		}
		for i, id := range c.IDs {
			if seen[id] || i > 0 && c.IDs[i-1] >= id {
				t.Errorf("piece %v repeats or is not ascending", c.IDs)
			}
			seen[id] = true
		}
	}
	if len(seen) != 25 {
		t.Errorf("pieces hold %d memories, want 25", len(seen))
	}
	if again := consolidate.Clusters(ms, 0, now, consolidate.ClusterOptions{}); !reflect.DeepEqual(again, got) {
		t.Errorf("split is not deterministic: %v then %v", clusterIDs(got), clusterIDs(again))
	}
}

// On 10,000 memories with planted near-duplicate groups, Clusters finds
// the planted pairs and little else.
func TestClustersFindsPlantedDuplicates(t *testing.T) {
	ms, groups := synthetic(10000, 1)
	start := time.Now()
	cs := consolidate.Clusters(ms, 0, now, consolidate.ClusterOptions{})
	t.Logf("10,000 memories: %d clusters in %v", len(cs), time.Since(start))
	in := map[int64]int{}
	for i, c := range cs {
		for _, id := range c.IDs {
			in[id] = i + 1
		}
	}
	group := map[int64]int{}
	pairs, found := 0, 0
	for g, ids := range groups {
		for i, a := range ids {
			group[a] = g + 1
			for _, b := range ids[i+1:] {
				pairs++
				if in[a] != 0 && in[a] == in[b] {
					found++
				}
			}
		}
	}
	recall := float64(found) / float64(pairs)
	t.Logf("recall %.3f (%d of %d planted pairs)", recall, found, pairs)
	if recall < 0.95 {
		t.Errorf("recall of planted pairs %.3f (%d of %d), want >= 0.95", recall, found, pairs)
	}
	false_ := 0
	for _, c := range cs {
		g := group[c.IDs[0]]
		for _, id := range c.IDs {
			if group[id] == 0 || group[id] != g {
				false_++
				break
			}
		}
	}
	t.Logf("%d of %d clusters mix unrelated memories", false_, len(cs))
	if false_ > len(cs)/100+1 {
		t.Errorf("%d of %d clusters mix unrelated memories, want at most 1%%", false_, len(cs))
	}
}

func BenchmarkClusters(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		ms, _ := synthetic(n, 1)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				consolidate.Clusters(ms, 0, now, consolidate.ClusterOptions{})
			}
		})
	}
}
