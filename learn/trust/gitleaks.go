package trust

//go:generate go run mkrules.go

import (
	"math"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
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
	re     *regexp.Regexp
	allow  []compiledAllow
	assign bool // the regexp is keyword, operator, value
	// starts: the regexp opens with a word boundary and then one of the
	// keywords, so a keyword inside a word ("ey" in "key") cannot start it.
	starts bool
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
		c := &compiledRule{gitleaksRule: r, re: regexp.MustCompile(r.re),
			assign: strings.Contains(r.re, assignOperator), starts: startsWithKeyword(r)}
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

// assignOperator is the operator group of gitleaks' assignment rules.
const assignOperator = `(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)`

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
//
// A rule runs only where one of its keywords occurs. Most of gitleaks'
// rules are "keyword, a few name characters, an operator, the value"
// (assign); those run on a window around each occurrence that has an
// operator soon after it, not on the whole text: a memory that merely says
// "the api key" costs a keyword scan, not a regexp run.
func (s *ruleSet) find(text string, spans []span) []span {
	lower := strings.ToLower(text)
	if len(lower) != len(text) {
		// Lower-casing changed byte lengths (rare letters such as İ):
		// keywords are only a prefilter, so an ASCII-only fold will do.
		lower = asciiLower(text)
	}
	whole := map[int]bool{}
	for _, r := range s.always {
		whole[r] = true
	}
	windows := map[int][][2]int{}
	for _, h := range s.keywords.hits(lower) {
		for _, r := range h.rules {
			if whole[r] {
				continue
			}
			if s.rules[r].starts && h.at > 0 && isWordByte(lower[h.at-1]) {
				continue
			}
			if !s.rules[r].assign {
				whole[r] = true
				continue
			}
			if w, ok := assignWindow(lower, h.at, h.n, 8); ok {
				windows[r] = append(windows[r], w)
			}
		}
	}
	for i, r := range s.rules {
		switch {
		case whole[i]:
			spans = s.matches(r, text, 0, len(text), spans)
		case windows[i] != nil:
			end := 0
			for _, w := range windows[i] {
				if w[0] < end {
					w[0] = end // windows never rescan
				}
				if w[0] < w[1] {
					spans = s.matches(r, text, w[0], w[1], spans)
					end = w[1]
				}
			}
		}
	}
	return spans
}

func startsWithKeyword(r *gitleaksRule) bool {
	re, ok := strings.CutPrefix(r.re, `\b`)
	if !ok || len(r.keywords) == 0 {
		return false
	}
	for _, p := range []string{"(?:", "("} {
		re = strings.TrimPrefix(re, p)
	}
	re = strings.ToLower(re)
	for _, k := range r.keywords {
		if !strings.HasPrefix(re, strings.ToLower(k)) {
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func (s *ruleSet) matches(r *compiledRule, text string, from, to int, spans []span) []span {
	for _, m := range r.re.FindAllStringSubmatchIndex(text[from:to], -1) {
		for k := range m {
			if m[k] >= 0 {
				m[k] += from
			}
		}
		if sp, ok := s.finding(r, text, m); ok {
			spans = append(spans, sp)
		}
	}
	return spans
}

// assignWindow is where an assignment to the keyword at [at, at+n) can be,
// if one can: the keyword, at most 20 name or space characters, at most 3
// spaces or quotes, an operator, at most 5 spaces, quotes or "=", and at
// least minValue value characters, the shape of gitleaks' assignment rules
// and of mull's. The window runs from the start of the name (at most 60
// bytes before, as the rules allow 50) to the end of a value of at most 300
// bytes.
func assignWindow(lower string, at, n, minValue int) ([2]int, bool) {
	i := at + n
	i = skip(lower, i, 20, func(c byte) bool { return c == ' ' || c == '\t' || c == '.' || c == '-' || isWordByte(c) })
	i = skip(lower, i, 3, func(c byte) bool { return c == ' ' || c == '\t' || c == '\'' || c == '"' })
	switch {
	case i < len(lower) && strings.IndexByte("=:>,|?", lower[i]) >= 0:
		i++
	case strings.HasPrefix(lower[i:], "："):
		i += len("：")
	default:
		return [2]int{}, false
	}
	i = skip(lower, i, 5, func(c byte) bool { return strings.IndexByte(" \t'\"`=:>", c) >= 0 })
	v := skip(lower, i, minValue, func(c byte) bool { return c > ' ' && strings.IndexByte("'\"`,;", c) < 0 })
	if v-i < minValue {
		return [2]int{}, false
	}
	return [2]int{lineStart(lower, max(0, at-60)), min(len(lower), at+n+330)}, true
}

func skip(s string, i, most int, ok func(byte) bool) int {
	for end := min(len(s), i+most); i < end && ok(s[i]); i++ {
	}
	return i
}

// lineStart moves i forward to a rune start.
func lineStart(s string, i int) int {
	for i < len(s) && i > 0 && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
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
