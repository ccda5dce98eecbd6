package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
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
// BM25 over the search's terms of at least MinIndexedTerm characters
// (textRelevance), the same on both databases; at least 0, higher is more
// relevant, 0 when only terms shorter than MinIndexedTerm matched. The
// scale depends on the search: the caller normalizes it
// (memory.NormalizeRelevance) before it ranks.
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
		if err := s.matchIndexed(ctx, q, found, workspaces, long, limit); err != nil {
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

// matchIndexed adds to found the limit most relevant live memories of the
// libraries that contain a term (each of at least MinIndexedTerm
// characters), in two steps. The first reads, of every memory the index
// finds, only its id and normalized text, and counts the text's
// characters and terms; the relevances are computed from those counts
// (textRelevance). The second reads the whole rows of the best limit
// only.
//
// The databases' own relevances cost more than the search: pg_trgm's
// similarity() rebuilt each hit's trigrams (10 µs a hit, 85% of a
// three-word search that hit 749 memories of 10,000), and SQLite's bm25()
// doubled the cost of the FTS5 query.
func (s *Store) matchIndexed(ctx context.Context, q querier, found map[int64]MemoryMatch, workspaces, terms []string, limit int) error {
	query, args := s.indexedSearch(workspaces, terms)
	hits, err := scanIndexedHits(ctx, q, query, terms, args...)
	if err != nil {
		return err
	}
	if len(hits) == 0 {
		return nil
	}
	rel := textRelevance(hits, len(terms))
	order := make([]int, len(hits))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(rel[b], rel[a]), cmp.Compare(hits[b].id, hits[a].id))
	})
	order = order[:min(limit, len(order))]
	relOf := make(map[int64]float64, len(order))
	for _, i := range order {
		relOf[hits[i].id] = rel[i]
	}
	where, args := memoryWhere(workspaces, true)
	ids := make([]string, 0, len(order))
	for _, i := range order {
		ids = append(ids, arg(&args, hits[i].id))
	}
	// The live condition again: on Postgres this statement may see a
	// memory invalidated since the first one.
	rows, err := s.queryMemories(ctx, q, `select `+memoryColumns+` from memories where `+where+
		` and id in (`+strings.Join(ids, ", ")+`)`, args...)
	if err != nil {
		return fmt.Errorf("search memories: %w", err)
	}
	for _, m := range rows {
		addMatch(found, MemoryMatch{Memory: m, Relevance: relOf[m.ID]})
	}
	return nil
}

// indexedHit is what the first step of matchIndexed learns of a memory
// the index found.
type indexedHit struct {
	id int64
	// chars is the length of its normalized text, in characters.
	chars int
	// tf[i] is how many times its normalized text says term i.
	tf []int
}

// scanIndexedHits runs the first step of matchIndexed, rows of an id and a
// normalized text, and counts each text's characters and terms as it goes:
// the texts are read in place, none is kept. The hits' counts share one
// array.
func scanIndexedHits(ctx context.Context, q querier, query string, terms []string, args ...any) ([]indexedHit, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("search memories: %w", err)
	}
	defer rows.Close()
	pattern := make([][]byte, len(terms))
	for i, t := range terms {
		pattern[i] = []byte(t)
	}
	var hits []indexedHit
	var counts []int
	var text sql.RawBytes
	for rows.Next() {
		var h indexedHit
		if err := rows.Scan(&h.id, &text); err != nil {
			return nil, fmt.Errorf("search memories: %w", err)
		}
		h.chars = utf8.RuneCount(text)
		for _, p := range pattern {
			counts = append(counts, bytes.Count(text, p))
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search memories: %w", err)
	}
	n := len(terms)
	for i := range hits {
		hits[i].tf = counts[i*n : (i+1)*n : (i+1)*n]
	}
	return hits, nil
}

// indexedSearch is the first step of matchIndexed: the live memories of
// the libraries that contain a term (each of at least MinIndexedTerm
// characters), found by the full-text index, each term a substring
// anywhere in the text, any term enough. Of each it reads the id and the
// normalized text.
//
// On SQLite the index gives the ids, and the libraries' live memories are
// read by their own index (migration 032), which holds the text: no row
// of the table is read. On Postgres the trigram index finds each term, and
// the rows are read for the workspace, the live condition and the text.
func (s *Store) indexedSearch(workspaces, terms []string) (string, []any) {
	where, args := memoryWhere(workspaces, true)
	if s.Dialect == SQLite {
		// Each term a quoted FTS5 string: a phrase of its trigrams, so a
		// substring; a quote inside is doubled.
		phrases := make([]string, len(terms))
		for i, t := range terms {
			phrases[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
		}
		return `select id, text_norm from memories where ` + where + ` and id in (select rowid from memories_fts where memories_fts match ` + arg(&args, strings.Join(phrases, " OR ")) + `)`, args
	}
	likes := make([]string, len(terms))
	for i, t := range terms {
		likes[i] = "text_norm like " + arg(&args, "%"+likeEscaper.Replace(t)+"%") + ` escape '\'`
	}
	return `select id, text_norm from memories where ` + where + ` and (` + strings.Join(likes, " or ") + `)`, args
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
		addMatch(found, f)
	}
	return rows.Err()
}

// addMatch adds f to found, or keeps the memory's higher relevance.
func addMatch(found map[int64]MemoryMatch, f MemoryMatch) {
	if had, ok := found[f.ID]; !ok || f.Relevance > had.Relevance {
		found[f.ID] = f
	}
}

// scanFunc is a scanner made of a function, to scan a row's memory
// columns and what follows them.
type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }
