// Package consolidatetest builds synthetic memory libraries for the tests
// and benchmarks of sleep-time consolidation (jobs/consolidate, the CLI's
// kill tests), so they all plant the same duplicates.
package consolidatetest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
)

// Library stores a synthetic library of n memories in workspace, recorded
// a day ago: distinct filler, with a duplicate pair planted for every tenth
// memory (each pair differs only in case and punctuation, so a faithful
// merge exists), half facts, half lessons, and one more pair whose merge
// the fidelity check must reject (n+2 memories in all). It returns the
// number of planted pairs that merge.
func Library(t testing.TB, s *store.Store, workspace string, n int) int {
	t.Helper()
	ctx := context.Background()
	pairs := n / 10
	at := time.Now().UTC().Add(-24 * time.Hour)
	err := s.InTx(ctx, func(tx *sql.Tx) error {
		put := func(kind memory.Kind, text string) error {
			_, err := s.InsertMemory(ctx, tx, store.Memory{Workspace: workspace, Kind: string(kind), Text: text,
				TextNorm: memory.Normalize(text), Importance: 5, Src: "agent", Origin: "retro", RecordedAt: at})
			return err
		}
		kinds := []memory.Kind{memory.Fact, memory.Lesson}
		for i, text := range Texts(n - pairs) {
			if err := put(kinds[i%2], text); err != nil {
				return err
			}
			if i >= n-2*pairs {
				if err := put(kinds[i%2], strings.ToUpper(text[:1])+text[1:]+"."); err != nil {
					return err
				}
			}
		}
		// One pair a faithful merge cannot come from: the fake DeepSeek
		// answers the longer text, which lacks the other's port.
		if err := put(memory.Fact, "the api server listens on port 8080 in production"); err != nil {
			return err
		}
		return put(memory.Fact, "the api server listens on port 8081 in production (checked)")
	})
	if err != nil {
		t.Fatal(err)
	}
	return pairs
}

// vocabulary is 2000 made-up words: syllable pairs and triples.
var vocabulary = func() []string {
	syl := strings.Fields("ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu za ze zi zo zu")
	var out []string
	for _, a := range syl {
		for _, b := range syl {
			out = append(out, a+b)
			if len(out) == 2000 {
				return out
			}
			out = append(out, a+b+syl[(len(out)*7)%len(syl)])
		}
	}
	return out
}()

// Texts is n texts that share little, so none clusters with another: ten
// words each, drawn from the vocabulary by a seeded generator, plus a
// number. The same n gives the same texts.
func Texts(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		w := make([]string, 10)
		for j := range w {
			w[j] = vocabulary[r.IntN(len(vocabulary))]
		}
		out[i] = fmt.Sprintf("%s %d", strings.Join(w, " "), i)
	}
	return out
}
