package trust

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
)

// span is one credential found in a text: the bytes to replace and the
// credential's type for the marker ("" writes a bare [redacted], used where
// the key name before the value already says what it was).
type span struct {
	start, end int
	label      string
	rank       int // lower wins the label when spans overlap
}

// Ranks: the seed's own shapes keep their markers ("[redacted:ghp]"),
// then mull's structural ones, gitleaks' specific rules, mull's key=value
// assignments and last gitleaks' generic-api-key.
const (
	rankSeed = iota
	rankShape
	rankGitleaks
	rankAssignment
	rankProse
	rankGeneric
)

type credential struct {
	re    *regexp.Regexp
	group int    // the value's group; 0 replaces the whole match
	label string // "" derives it from the match (seed shapes)
	rank  int
	// keys: one must occur in the lower-cased text for the pattern to run.
	keys []string
	// assign: key, operator, value; run on a window around each key that
	// an operator follows, as the gitleaks rules of that shape are.
	assign bool
	// prose: key, words, value; run on a window after each key that a
	// digit soon follows (a prose value must hold one).
	prose bool
}

// valueChars is what a key=value's bare value may hold.
const valueChars = `[^\s"'` + "`" + `,;<>()\[\]{}]`

// credentials are mull's own patterns: the seed's shapes (kept for their
// markers) and what gitleaks' rules lack.
var credentials = []credential{
	{re: regexp.MustCompile(`ghp_[A-Za-z0-9]{20,}`), keys: []string{"ghp_"}},
	{re: regexp.MustCompile(`github_pat_[A-Za-z0-9_]{20,}`), keys: []string{"github_pat_"}},
	{re: regexp.MustCompile(`gh[ousr]_[A-Za-z0-9]{20,}`), keys: []string{"gho_", "ghu_", "ghs_", "ghr_"}},
	{re: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`), keys: []string{"sk-"}}, // \b: not inside "task-<uuid>"
	{re: regexp.MustCompile(`(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{12,}`), keys: []string{"akia", "asia", "abia", "acca"}},
	{re: regexp.MustCompile(`AIza[0-9A-Za-z_-]{30,}`), keys: []string{"aiza"}},
	{re: regexp.MustCompile(`xox[abeoprs]-[A-Za-z0-9-]{10,}`), keys: []string{"xox"}},
	{re: regexp.MustCompile(`eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`), keys: []string{"eyj"}},
	// Shapes gitleaks v8.30.1 has no rule for.
	{re: regexp.MustCompile(`\bdckr_pat_[A-Za-z0-9_-]{20,}`), label: "docker-pat", rank: rankShape, keys: []string{"dckr_pat_"}},
	{re: regexp.MustCompile(`\bGOCSPX-[A-Za-z0-9_-]{20,}`), label: "google-oauth-client-secret", rank: rankShape, keys: []string{"gocspx-"}},
	{re: regexp.MustCompile(`\bya29\.[A-Za-z0-9_-]{20,}`), label: "google-oauth-token", rank: rankShape, keys: []string{"ya29."}},
	{re: regexp.MustCompile(`[?&]sig=([A-Za-z0-9%/+=]{20,})`), group: 1, rank: rankShape, keys: []string{"sig="}},
	{re: regexp.MustCompile(`(?i)\bauthorization["']?[ \t]*[:=][ \t]*["']?basic[ \t]+([A-Za-z0-9+/]{8,}={0,2})`), group: 1, rank: rankShape, keys: []string{"basic"}},
	// A private key, with its END line or without: then up to the end of
	// its base64 body (and any header lines such as Proc-Type).
	{re: regexp.MustCompile(`(?s)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|(?:[ \t]*\n?[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+:[^\n]*))*)`),
		label: "private-key", rank: rankShape, keys: []string{"private key"}},
	// A password in a URL's userinfo: scheme, user and host stay.
	{re: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/?#@]{0,100}:([^\s/?#@]{1,200})@[^\s/?#@]`),
		group: 1, rank: rankShape, keys: []string{"://"}},
	{re: regexp.MustCompile(`(?i)\bbearer[ \t\x{3000}]+([A-Za-z0-9._~+/-]{16,}=*)`), group: 1, rank: rankSeed, keys: []string{"bearer"}},
	// key = value where the key names a secret, however short the value.
	{re: regexp.MustCompile(`(?i)(?:^|[^a-z0-9])[a-z0-9_.-]*?(?:passw(?:or)?d|passphrase|secret|(?:api|access|secret|private|signing|encryption|master|account)[_.-]?key|apikey|token|credentials?)["']?[ \t]*(=|:=|=>|:|：)[ \t\x{3000}]*("[^"\n]{1,300}"|'[^'\n]{1,300}'|` + valueChars + `{1,300})`),
		group: 2, rank: rankAssignment, keys: []string{"pass", "secret", "key", "token", "credential"}, assign: true},
	{re: regexp.MustCompile(`(?i)[a-z0-9_]*pwd[ \t]*(=)[ \t]*("[^"\n]{1,300}"|'[^'\n]{1,300}'|` + valueChars + `{1,300})`),
		group: 2, rank: rankAssignment, keys: []string{"pwd"}, assign: true},
	// Prose: "the password is hunter2", "auth token 0123…"; the value must
	// look like one (see secretLike), so "the password is stored" stays.
	{re: regexp.MustCompile(`(?i)\b(?:passw(?:or)?d|passphrase|secret|token|api[ _-]?key)[ \t]+(?:is|was|=)[ \t]+(` + valueChars + `{4,300})`),
		group: 1, rank: rankProse, keys: []string{"pass", "secret", "token", "key"}, prose: true},
	{re: regexp.MustCompile(`(?i)\b(?:token|secret|api[ _-]?key)[ \t]+([A-Za-z0-9_-]{20,300})`),
		group: 1, rank: rankProse, keys: []string{"secret", "token", "key"}, prose: true},
	{re: regexp.MustCompile(`(?:密钥|秘钥|密码|口令|凭据|凭证|令牌)[ \t\x{3000}]*(=|:|：)[ \t\x{3000}]*("[^"\n]{1,300}"|'[^'\n]{1,300}'|[^\s"'，。；,;]{1,300})`),
		group: 2, rank: rankAssignment, keys: []string{"密钥", "秘钥", "密码", "口令", "凭据", "凭证", "令牌"}, assign: true},
	// Chinese prose: "数据库密码是 j90ZvKmy", "令牌为 …"; as in English
	// prose the value must look like one, so "密码是必填的" stays.
	{re: regexp.MustCompile(`(?:密钥|秘钥|密码|口令|凭据|凭证|令牌)[ \t\x{3000}]*(?:是|为|就是)[ \t\x{3000}:：]*["'“]?([A-Za-z0-9!@#$%^&*+=/_.~?-]{4,300})`),
		group: 1, rank: rankProse, keys: []string{"密钥", "秘钥", "密码", "口令", "凭据", "凭证", "令牌"}, prose: true},
}

var seedLabel = regexp.MustCompile(`^(github_pat_|gh[pousr]_|sk-|AKIA|ASIA|ABIA|ACCA|AIza|xox[abeoprs]-|eyJ)`)

// placeholder is a value that names no secret: a variable, a template, a
// mask, or a marker the gate wrote itself.
var placeholder = regexp.MustCompile(`(?i)^(?:\$\{?[a-z_][a-z0-9_]*\}?|\$\(.*\)|%[a-z_]+%|\{\{.*\}\}|<[^>]*>|\*+|x{3,}|\.\.\.|…|null|nil|none|true|false|required|optional|string|redacted|\[redacted.*)$`)

// Redact replaces credentials in text with a marker that keeps their type
// but none of their characters. A memory of which key serves which service
// stays useful; the key itself must never reach a prompt or the global
// library. It runs on the normalized text, as Check does.
func Redact(text string) (string, bool) {
	out, n := redact(Normalize(text))
	return out, n > 0
}

// redact finds every credential in normalized text and replaces each, once
// however many rules found it.
func redact(text string) (string, int) {
	spans := gitleaks().find(text, nil)
	for i := range spans {
		spans[i].rank = rankGitleaks
		if spans[i].label == "generic-api-key" {
			spans[i].rank = rankGeneric
		}
	}
	lower := strings.ToLower(text)
	for _, c := range credentials {
		if !containsAny(lower, c.keys) {
			continue
		}
		for _, w := range c.windows(lower) {
			for _, m := range c.re.FindAllStringSubmatchIndex(text[w[0]:w[1]], -1) {
				for k := range m {
					if m[k] >= 0 {
						m[k] += w[0]
					}
				}
				if sp, ok := c.span(text, m); ok {
					spans = append(spans, sp)
				}
			}
		}
	}
	if len(spans) == 0 {
		return text, 0
	}
	spans = merge(spans)
	var b strings.Builder
	last := 0
	for _, s := range spans {
		b.WriteString(text[last:s.start])
		if s.label == "" {
			b.WriteString("[redacted]")
		} else {
			b.WriteString("[redacted:" + s.label + "]")
		}
		last = s.end
	}
	b.WriteString(text[last:])
	return b.String(), len(spans)
}

// windows is where c runs: the whole text, or for an assignment each
// stretch around a key that an operator follows, never scanned twice.
func (c credential) windows(lower string) [][2]int {
	if !c.assign && !c.prose {
		return [][2]int{{0, len(lower)}}
	}
	var ws [][2]int
	for _, k := range c.keys {
		for i := 0; ; {
			j := strings.Index(lower[i:], k)
			if j < 0 {
				break
			}
			if c.prose {
				at := i + j
				if tail := lower[at+len(k) : min(len(lower), at+len(k)+60)]; strings.ContainsAny(tail, "0123456789") {
					ws = append(ws, [2]int{lineStart(lower, max(0, at-20)), min(len(lower), at+len(k)+330)})
				}
			} else if w, ok := assignWindow(lower, i+j, len(k), 1); ok {
				ws = append(ws, w)
			}
			i += j + len(k)
		}
	}
	slices.SortFunc(ws, func(a, b [2]int) int { return a[0] - b[0] })
	var out [][2]int
	for _, w := range ws {
		if n := len(out); n > 0 && w[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], w[1])
			continue
		}
		out = append(out, w)
	}
	return out
}

func (c credential) span(text string, m []int) (span, bool) {
	start, end := m[0], m[1]
	if c.group > 0 {
		start, end = m[2*c.group], m[2*c.group+1]
		v := text[start:end]
		if call(text, start, end) {
			return span{}, false
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') {
			start, end, v = start+1, end-1, v[1:len(v)-1]
		}
		if placeholder.MatchString(strings.TrimSpace(v)) || strings.TrimSpace(v) == "" {
			return span{}, false
		}
		if c.rank == rankProse && !(secretLike(v) && strings.ContainsAny(v, "0123456789")) {
			return span{}, false
		}
		if c.rank == rankAssignment && m[2] >= 0 && text[m[2]:m[3]] != "=" && !secretLike(v) {
			// "Secret: never commit it" is prose; after a colon a value
			// must look like one (a digit or a symbol, or quoted).
			if m[4] < 0 || (text[m[4]] != '"' && text[m[4]] != '\'') {
				return span{}, false
			}
		}
		return span{start: start, end: end, rank: c.rank}, true
	}
	end = start + len(strings.TrimRight(text[start:end], " \t\n"))
	label := c.label
	if label == "" {
		label = strings.TrimRight(seedLabel.FindString(text[start:end]), "-_")
		if label == "eyJ" {
			label = "jwt"
		}
	}
	return span{start: start, end: end, label: label, rank: c.rank}, true
}

// call reports an unquoted value that is code reading the secret from
// elsewhere, not the secret: a call or an index ("api_key:
// os.Getenv(\"API_KEY\")", "token = ENV[\"TOKEN\"]", "password =
// getpass()").
func call(text string, start, end int) bool {
	if start == end || text[start] == '"' || text[start] == '\'' || end >= len(text) {
		return false
	}
	if text[end] != '(' && text[end] != '[' || !identPath(text[start:end]) {
		return false
	}
	// "pw(x" may be a password; a call has a dotted name ("os.Getenv("),
	// no arguments ("getpass()") or a quoted one ("ENV['TOKEN']").
	rest := text[end+1:]
	return strings.Contains(text[start:end], ".") || strings.HasPrefix(rest, ")") || strings.HasPrefix(rest, "]") ||
		strings.HasPrefix(rest, `"`) || strings.HasPrefix(rest, "'") || strings.HasPrefix(rest, "`")
}

// identPath: an identifier or a dotted path of them ("os.Getenv").
func identPath(v string) bool {
	for i, part := range strings.Split(v, ".") {
		if part == "" || '0' <= part[0] && part[0] <= '9' && i == 0 {
			return false
		}
		for j := 0; j < len(part); j++ {
			if !isWordByte(part[j]) && part[j] != '$' {
				return false
			}
		}
	}
	return true
}

func secretLike(v string) bool {
	return strings.ContainsAny(v, "0123456789!@#$%^&*+=/_-.~?")
}

// merge joins overlapping spans; the best-ranked one names the union.
func merge(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end)) })
	out := spans[:1]
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if s.start >= last.end {
			out = append(out, s)
			continue
		}
		last.end = max(last.end, s.end)
		if s.rank < last.rank {
			last.label, last.rank = s.label, s.rank
		}
	}
	return out
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
