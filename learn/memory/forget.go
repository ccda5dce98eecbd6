package memory

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// MinForgetRunes is the shortest needle (normalized) /forget accepts: a
// shorter one matches nothing under Matches, so the request is refused
// instead of answering "no match" to a typo.
const MinForgetRunes = 4

// CheckForget checks /forget's keywords: present, no bytes no store keeps,
// at most MaxSearchChars, and at least MinForgetRunes characters once
// normalized. A bad one is a *FieldError naming field.
func CheckForget(field, keywords string) error {
	bad := func(format string, args ...any) error {
		return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	if problem := controlProblem(keywords); problem != "" {
		return bad("%s", problem)
	}
	if n := utf8.RuneCountInString(keywords); n > MaxSearchChars {
		return bad("%d characters; at most %d", n, MaxSearchChars)
	}
	if strings.TrimSpace(keywords) == "" {
		return bad("required: words of the memories to forget")
	}
	if n := utf8.RuneCountInString(Normalize(keywords)); n < MinForgetRunes {
		return bad("%q is %d characters once normalized; at least %d (a shorter one would match too much, so the seed's rule matches nothing)",
			keywords, n, MinForgetRunes)
	}
	return nil
}

// Forget is /forget's rule (the seed's): of ms, the memories live at now,
// not quarantined, whose text Matches keywords: equal once normalized, or
// one containing the other where the contained one has at least 6
// characters. Order is kept.
func Forget(keywords string, ms []Memory, now time.Time) []Memory {
	var out []Memory
	for _, m := range ms {
		if m.ValidAt(now) && !m.Quarantined && Matches(keywords, m.Text) {
			out = append(out, m)
		}
	}
	return out
}
