package trust

//go:generate go run mkrules.go

import (
	"math"
	"regexp"
	"strings"
	"sync"
)

// gitleaksRule is one rule of gitleaks' default config, as mkrules.go
// copies it: the regexp, the capture group that is the secret (0: the first
// non-empty one, as gitleaks picks it), the minimum Shannon entropy of the
// secret, the keywords one of which must occur (lower-cased) for the rule to
// run at all, and the rule's own allowlists.
type gitleaksRule struct {
	id       string
	re       string
	group    int
	entropy  float64
	keywords []string
	allow    []*gitleaksAllow
}

// gitleaksAllow is an allowlist: a finding is dropped when one of its
// regexes matches the target (the secret, the whole match or the line) or
// the secret contains a stop word; with and, when both hold.
type gitleaksAllow struct {
	and       bool
	target    string
	regexes   []string
	stopwords []string
}

type compiledRule struct {
	*gitleaksRule
	re    *regexp.Regexp
	allow []compiledAllow
}

type compiledAllow struct {
	*gitleaksAllow
	re *regexp.Regexp // the regexes joined, nil when there are none
}

// gitleaks is the rule set compiled once, on first use: 200-odd regexps
// cost tens of milliseconds to compile, which no program that never checks
// a text should pay at start.
var gitleaks = sync.OnceValue(func() *ruleSet {
	// The global stop words are left out: they spare test fixtures in a
	// repository ("abcdefghijklmnopqrstuvwxyz"), and mull would rather
	// redact an example key than serve a real one that contains it.
	global := *gitleaksGlobal
	global.stopwords = nil
	s := &ruleSet{global: compileAllow(&global)}
	for i := range gitleaksRules {
		r := &gitleaksRules[i]
		c := &compiledRule{gitleaksRule: r, re: regexp.MustCompile(r.re)}
		for _, a := range r.allow {
			c.allow = append(c.allow, compileAllow(a))
		}
		s.rules = append(s.rules, c)
		for _, k := range r.keywords {
			s.keywords.add(strings.ToLower(k), len(s.rules)-1)
		}
		if len(r.keywords) == 0 {
			s.always = append(s.always, len(s.rules)-1)
		}
	}
	return s
})

type ruleSet struct {
	rules    []*compiledRule
	global   compiledAllow
	keywords keywordIndex
	always   []int
}

func compileAllow(a *gitleaksAllow) compiledAllow {
	c := compiledAllow{gitleaksAllow: a}
	if a != nil && len(a.regexes) > 0 {
		c.re = regexp.MustCompile("(?:" + strings.Join(a.regexes, ")|(?:") + ")")
	}
	return c
}

// find adds a span for every secret the rules find in text.
func (s *ruleSet) find(text string, spans []span) []span {
	lower := strings.ToLower(text)
	if len(lower) != len(text) {
		// Lower-casing changed byte lengths (rare letters such as İ):
		// keywords are only a prefilter, so an ASCII-only fold will do.
		lower = asciiLower(text)
	}
	for _, i := range s.keywords.rulesIn(lower, s.always) {
		r := s.rules[i]
		for _, m := range r.re.FindAllStringSubmatchIndex(text, -1) {
			if sp, ok := s.finding(r, text, m); ok {
				spans = append(spans, sp)
			}
		}
	}
	return spans
}

func (s *ruleSet) finding(r *compiledRule, text string, m []int) (span, bool) {
	start, end := m[0], m[1]
	if g := r.group; g > 0 && 2*g+1 < len(m) && m[2*g] >= 0 {
		start, end = m[2*g], m[2*g+1]
	} else if g == 0 {
		for k := 2; k+1 < len(m); k += 2 {
			if m[k] >= 0 && m[k+1] > m[k] {
				start, end = m[k], m[k+1]
				break
			}
		}
	}
	secret := text[start:end]
	match := strings.Trim(text[m[0]:m[1]], "\n")
	if secret == "" || (r.entropy > 0 && shannon(secret) <= r.entropy) {
		return span{}, false
	}
	line := lineAround(text, m[0], m[1])
	if s.global.allows(secret, match, line) {
		return span{}, false
	}
	for _, a := range r.allow {
		if a.allows(secret, match, line) {
			return span{}, false
		}
	}
	return span{start: start, end: end, label: r.id}, true
}

func (a compiledAllow) allows(secret, match, line string) bool {
	if a.gitleaksAllow == nil {
		return false
	}
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	re := a.re != nil && a.re.MatchString(target)
	stop := false
	if len(a.stopwords) > 0 {
		ls := strings.ToLower(secret)
		for _, w := range a.stopwords {
			if strings.Contains(ls, w) {
				stop = true
				break
			}
		}
	}
	if a.and {
		return (a.re == nil || re) && (len(a.stopwords) == 0 || stop)
	}
	return re || stop
}

func lineAround(text string, start, end int) string {
	i := strings.LastIndexByte(text[:start], '\n') + 1
	j := strings.IndexByte(text[end:], '\n')
	if j < 0 {
		return text[i:]
	}
	return text[i : end+j]
}

// shannon is gitleaks' entropy: bits per character of s.
func shannon(s string) float64 {
	if s == "" {
		return 0
	}
	counts := map[rune]int{}
	for _, c := range s {
		counts[c]++
	}
	inv := 1 / float64(len(s))
	var e float64
	for _, n := range counts {
		f := float64(n) * inv
		e -= f * math.Log2(f)
	}
	return e
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
