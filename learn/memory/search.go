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
	// MaxSearchTermChars caps one word, in characters (a longer one, a
	// pasted URL or path, is looked for by its first MaxSearchTermChars:
	// whatever contains the word contains them): the full-text
	// index looks a word up by each of its 3-character substrings, so a
	// word of n characters is n-2 index probes, and 32 words of 64 keep a
	// search under 2,000. No word an agent looks for is longer: an English
	// word, an identifier, a 64-digit hash, a Chinese phrase (one word,
	// having no spaces) of 64 characters.
	MaxSearchTermChars = 64
)

// SearchTerms splits a search's text into its distinct normalized words,
// sorted, each cut to its first MaxSearchTermChars characters, or reports
// a *FieldError naming field q: none, more than MaxSearchTerms, over
// MaxSearchChars, or bytes no store keeps (NUL, invalid UTF-8).
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
	words := strings.Fields(Normalize(q))
	for i, w := range words {
		if r := []rune(w); len(r) > MaxSearchTermChars {
			words[i] = string(r[:MaxSearchTermChars])
		}
	}
	terms := slices.Compact(slices.Sorted(slices.Values(words)))
	switch {
	case len(terms) == 0:
		return nil, bad("required: words to look for")
	case len(terms) > MaxSearchTerms:
		return nil, bad("%d distinct words; at most %d", len(terms), MaxSearchTerms)
	}
	return terms, nil
}
