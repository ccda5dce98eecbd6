package memory

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits on one memory search.
const (
	// MaxSearchTerms caps a search's distinct words: each is one arm of
	// an OR in one SQL statement (SQLite refuses an expression past 1000
	// terms deep, and every arm costs an index probe). An agent's query is
	// a handful of words.
	MaxSearchTerms = 32
	// MaxSearchChars caps a search's text before it is split into words.
	MaxSearchChars = 1000
	// MaxSearchTermChars caps one word, in characters: the full-text
	// index looks a word up by each of its 3-character substrings, so a
	// word of n characters is n-2 index probes, and 32 words of 64 keep a
	// search under 2,000. No word an agent looks for is longer: an English
	// word, an identifier, a 64-digit hash, a Chinese phrase (one word,
	// having no spaces) of 64 characters.
	MaxSearchTermChars = 64
)

// SearchTerms splits a search's text into its distinct normalized words,
// sorted, or reports a *FieldError naming field q: none, more than
// MaxSearchTerms, over MaxSearchChars, a word over MaxSearchTermChars, or bytes no store keeps (NUL,
// invalid UTF-8).
func SearchTerms(q string) ([]string, error) {
	bad := func(format string, args ...any) error {
		return &FieldError{Field: "q", Problem: fmt.Sprintf(format, args...)}
	}
	if problem := controlProblem(q); problem != "" {
		return nil, bad("%s", problem)
	}
	if n := utf8.RuneCountInString(q); n > MaxSearchChars {
		return nil, bad("%d characters; at most %d", n, MaxSearchChars)
	}
	terms := slices.Compact(slices.Sorted(slices.Values(strings.Fields(Normalize(q)))))
	switch {
	case len(terms) == 0:
		return nil, bad("required: words to look for")
	case len(terms) > MaxSearchTerms:
		return nil, bad("%d distinct words; at most %d", len(terms), MaxSearchTerms)
	}
	for _, t := range terms {
		if n := utf8.RuneCountInString(t); n > MaxSearchTermChars {
			return nil, bad("a word of %d characters (%q); at most %d per word", n, cut(t, 20), MaxSearchTermChars)
		}
	}
	return terms, nil
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
