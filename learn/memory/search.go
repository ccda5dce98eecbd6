package memory

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits on one memory search.
const (
	// MaxSearchTerms caps a search's distinct words: each is one LIKE in
	// one SQL statement, and SQLite refuses an expression past 1000 terms
	// deep. An agent's query is a handful of words.
	MaxSearchTerms = 32
	// MaxSearchChars caps a search's text before it is split into words.
	MaxSearchChars = 1000
)

// SearchTerms splits a search's text into its distinct normalized words,
// sorted, or reports a *FieldError naming field q: none, more than
// MaxSearchTerms, over MaxSearchChars, or bytes no store keeps (NUL,
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
	return terms, nil
}
