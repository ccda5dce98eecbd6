package storetest

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
)

// Filler syllables and characters: Sentence's made-up vocabulary. Tests
// look for words none of them can make (a search must find its memory
// among the filler, not in it).
var (
	fillerSyllables = []string{"ka", "lo", "mi", "nu", "pe", "ro", "so", "tu", "ve", "zo",
		"bar", "cen", "dol", "fim", "gor", "hux", "jat", "kep", "lum", "nox"}
	fillerHan = []rune("天地人山水火木金土日月星风云雨雪花草树林石河海江湖田心手口目耳")
)

// Sentence is the i-th filler memory text, already normalized (lower
// case, single spaces, no punctuation): 6 to 13 made-up words of 2 or 3
// syllables, or, one in four, 8 to 23 Chinese characters with no spaces.
// It is the same for the same i on every run.
func Sentence(i int) string {
	x := uint64(i)*6364136223846793005 + 1442695040888963407
	next := func(n int) int {
		x = x*6364136223846793005 + 1442695040888963407
		return int((x >> 33) % uint64(n))
	}
	if i%4 == 3 {
		r := make([]rune, 8+next(16))
		for j := range r {
			r[j] = fillerHan[next(len(fillerHan))]
		}
		return string(r)
	}
	words := make([]string, 6+next(8))
	for j := range words {
		w := fillerSyllables[next(len(fillerSyllables))] + fillerSyllables[next(len(fillerSyllables))]
		if next(2) == 0 {
			w += fillerSyllables[next(len(fillerSyllables))]
		}
		words[j] = w
	}
	return strings.Join(words, " ")
}

// Memories stores n live filler memories (Sentence(from) to
// Sentence(from+n-1)) in workspace, recorded at at, importance 5, in one
// transaction of multi-row inserts: a big library for search tests and
// benchmarks, stored in a second or two rather than one insert at a time.
// On Postgres the table is then analyzed, as autovacuum does within a
// minute of a bulk write: with no statistics the planner takes any
// workspace for a handful of rows and never picks the search's trigram
// index, a state a real library does not stay in.
func Memories(tb testing.TB, s *store.Store, workspace string, from, n int, at time.Time) {
	tb.Helper()
	ctx := context.Background()
	const batch = 500
	err := s.InTx(ctx, func(tx *sql.Tx) error {
		for start := from; start < from+n; start += batch {
			args := []any{workspace, at.UTC().Truncate(time.Microsecond)}
			var rows []string
			for i := start; i < min(start+batch, from+n); i++ {
				args = append(args, Sentence(i))
				p := "$" + strconv.Itoa(len(args))
				rows = append(rows, "($1, 'fact', "+p+", "+p+", 5, 'tool', $2, 180)")
			}
			if _, err := tx.ExecContext(ctx, `insert into memories (workspace, kind, text, text_norm, importance, origin, recorded_at, ttl_days)
				values `+strings.Join(rows, ", "), args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("storetest: fill %d memories: %v", n, err)
	}
	if err := s.Analyze(ctx, "memories"); err != nil {
		tb.Fatalf("storetest: %v", err)
	}
}
