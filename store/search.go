package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxSearchTerms is memory.MaxSearchTerms (store does not import learn):
// the most terms one search statement holds.
const MaxSearchTerms = 32

// MinIndexedTerm is the shortest term the full-text index finds (in
// characters): both indexes (SQLite's FTS5 trigram tokenizer, Postgres's
// pg_trgm) are built of 3-character substrings. A shorter term, such as a
// 2-character Chinese word, is looked for with a plain substring test over
// the libraries' live memories instead.
const MinIndexedTerm = 3

// MemoryMatch is a memory a search found, with its raw text relevance:
// bm25 (negated) on SQLite, pg_trgm's similarity to the query on Postgres;
// at least 0, higher is more relevant, 0 when only terms shorter than
// MinIndexedTerm matched. The scale is the database's: the caller
// normalizes it (memory.NormalizeRelevance) before it ranks.
type MemoryMatch struct {
	Memory
	Relevance float64
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// MatchMemories finds the live memories of some libraries whose normalized
// text contains at least one of terms (already normalized), by the
// full-text index (migration 029): at most limit (defaults to 500) found by
// the index, the most relevant first, and at most limit more, the newest,
// that contain only terms too short for the index. Each memory is listed
// once; they come most relevant first, then newest. Ranking is the
// caller's.
func (s *Store) MatchMemories(ctx context.Context, q querier, workspaces, terms []string, limit int) ([]MemoryMatch, error) {
	switch {
	case len(terms) == 0:
		return nil, nil
	case len(terms) > MaxSearchTerms:
		// The callers cap terms first (memory.SearchTerms); this keeps one
		// that does not from building a statement a database refuses.
		return nil, fmt.Errorf("search memories: %d terms; at most %d", len(terms), MaxSearchTerms)
	}
	limit = cmp.Or(limit, 500)
	var long, short []string
	for _, t := range terms {
		if utf8.RuneCountInString(t) >= MinIndexedTerm {
			long = append(long, t)
		} else {
			short = append(short, t)
		}
	}
	found := map[int64]MemoryMatch{}
	if len(long) > 0 {
		query, args := s.indexedSearch(workspaces, long, limit)
		if err := s.collectMatches(ctx, q, found, query, args...); err != nil {
			return nil, err
		}
	}
	if len(short) > 0 {
		query, args := s.substringSearch(workspaces, short, limit)
		if err := s.collectMatches(ctx, q, found, query, args...); err != nil {
			return nil, err
		}
	}
	return slices.SortedFunc(maps.Values(found), func(a, b MemoryMatch) int {
		return cmp.Or(cmp.Compare(b.Relevance, a.Relevance), cmp.Compare(b.ID, a.ID))
	}), nil
}

// SearchMemories is MatchMemories without the relevances.
func (s *Store) SearchMemories(ctx context.Context, q querier, workspaces, terms []string, limit int) ([]Memory, error) {
	found, err := s.MatchMemories(ctx, q, workspaces, terms, limit)
	out := make([]Memory, len(found))
	for i, f := range found {
		out[i] = f.Memory
	}
	return out, err
}

// indexedSearch is the statement that finds terms of at least
// MinIndexedTerm characters by the full-text index, each term a substring
// anywhere in the text, any term enough.
//
// On SQLite it runs in two steps: the inner select ranks the index's hits
// in the libraries by bm25 and keeps the best limit, reading of each hit
// only the id, the relevance and the columns the filter needs; the outer
// one reads the whole row of those only. Reading and sorting every hit's
// whole row was most of a search's cost when a common word hits hundreds
// of memories.
func (s *Store) indexedSearch(workspaces, terms []string, limit int) (string, []any) {
	where, args := memoryWhere(workspaces, true)
	if s.Dialect == SQLite {
		// Each term a quoted FTS5 string: a phrase of its trigrams, so a
		// substring; a quote inside is doubled.
		phrases := make([]string, len(terms))
		for i, t := range terms {
			phrases[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
		}
		match := arg(&args, strings.Join(phrases, " OR "))
		return `select ` + prefixedMemoryColumns + `, f.rel from (
				select m.id, -bm25(memories_fts) as rel from memories_fts
				join memories m on m.id = memories_fts.rowid
				where memories_fts match ` + match + ` and ` + where + `
				order by rel desc, m.id desc limit ` + arg(&args, limit) + `
			) f join memories m on m.id = f.id
			order by f.rel desc, m.id desc`, args
	}
	rel := "similarity(text_norm, " + arg(&args, strings.Join(terms, " ")) + ")"
	likes := make([]string, len(terms))
	for i, t := range terms {
		likes[i] = "text_norm like " + arg(&args, "%"+likeEscaper.Replace(t)+"%") + ` escape '\'`
	}
	return `select ` + memoryColumns + `, ` + rel + ` from memories where ` + where +
		` and (` + strings.Join(likes, " or ") + `) order by ` + rel + ` desc, id desc limit ` + arg(&args, limit), args
}

// substringSearch is the statement that finds terms too short for the
// index: a substring test over the libraries' live memories, the newest
// first, relevance 0. On SQLite the libraries' live memories are read
// newest first by their own index (migration 032), which holds the text,
// and the read stops at limit hits: a search reads no other workspace's
// memories nor dead ones, and the table only for the hits. Postgres walks
// its primary key backwards to the same end.
func (s *Store) substringSearch(workspaces, terms []string, limit int) (string, []any) {
	where, args := memoryWhere(workspaces, true)
	fn := "instr(text_norm, %s) > 0"
	if s.Dialect == Postgres {
		fn = "strpos(text_norm, %s) > 0"
	}
	tests := make([]string, len(terms))
	for i, t := range terms {
		tests[i] = fmt.Sprintf(fn, arg(&args, t))
	}
	return `select ` + memoryColumns + `, 0.0 from memories where ` + where + ` and (` + strings.Join(tests, " or ") +
		`) order by id desc limit ` + arg(&args, limit), args
}

// arg appends v to a statement's arguments and returns its placeholder.
func arg(args *[]any, v any) string {
	*args = append(*args, v)
	return "$" + strconv.Itoa(len(*args))
}

// collectMatches runs a search statement and adds what it finds to found,
// keeping a memory's highest relevance.
func (s *Store) collectMatches(ctx context.Context, q querier, found map[int64]MemoryMatch, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("search memories: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f MemoryMatch
		m, err := scanMemory(scanFunc(func(dest ...any) error {
			return rows.Scan(append(dest, &f.Relevance)...)
		}))
		if err != nil {
			return fmt.Errorf("search memories: %w", err)
		}
		f.Memory = m
		if had, ok := found[m.ID]; !ok || f.Relevance > had.Relevance {
			found[m.ID] = f
		}
	}
	return rows.Err()
}

// scanFunc is a scanner made of a function, to scan a row's memory
// columns and what follows them.
type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// prefixedMemoryColumns are memoryColumns read from memories as m, in a
// join where a name alone is ambiguous.
var prefixedMemoryColumns = func() string {
	cols := strings.Split(memoryColumns, ",")
	for i, c := range cols {
		cols[i] = "m." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}()
