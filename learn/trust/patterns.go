package trust

import (
	"regexp"
	"strings"
)

// The seed's patterns are JavaScript regular expressions. JavaScript's \s
// also matches Unicode spaces (U+3000, NBSP…) and its . and ^ treat \r,
// U+2028 and U+2029 as line ends; Go's do not. So \s is spelt out as jsSpace
// and line ends are unified before matching: a full-width space must not
// slip an "ignore previous instructions" past Go where it could not slip
// past the seed.
const jsSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

const sp = `[` + jsSpace + `]`

var lineEnds = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u2028", "\n", "\u2029", "\n")

// injection is the seed's INJECTION_PATTERNS, all nine, in order, each
// with a name to record as the quarantine reason.
var injection = []struct {
	name string
	re   *regexp.Regexp
}{
	{"ignore previous instructions", regexp.MustCompile(`(?i)ignore` + sp + `+(all` + sp + `+)?(previous|prior|above)` + sp + `+instructions?`)},
	{"ignore previous instructions (zh)", regexp.MustCompile(`(忽略|无视|忘记)(之前|以上|上述|前面)?.{0,8}(指令|规则|要求|指示)`)},
	{"from now on you must only (zh)", regexp.MustCompile(`(从现在开始|接下来)你(必须|要|应该)只`)},
	{"execute immediately (zh)", regexp.MustCompile(`(务必|请)立即执行`)},
	{"fake system tag", regexp.MustCompile(`(?i)<` + sp + `*/?` + sp + `*(system|instruction|assistant)\b`)},
	{"fake role line", regexp.MustCompile(`(?im)^` + sp + `*(system|assistant)` + sp + `*:`)},
	{"download piped to a shell", regexp.MustCompile(`(?i)(curl|wget|Invoke-WebRequest)[^\n]{0,200}\|` + sp + `*(ba|z|pw)?sh`)},
	{"rm -rf /", regexp.MustCompile(`(?i)\brm` + sp + `+-rf` + sp + `+[/~]`)},
	{"format a drive", regexp.MustCompile(`(?i)\bformat` + sp + `+[a-z]:`)},
}

// Quarantine reports whether text reads like an instruction to the agent
// (the seed's nine patterns) and, if so, which pattern. It is checked at
// write and again at render. Beyond the seed, it also checks the text with
// full-width letters folded to ASCII, so "ｉｇｎｏｒｅ ｐｒｅｖｉｏｕｓ…" is
// caught too.
func Quarantine(text string) (bool, string) {
	t := lineEnds.Replace(text)
	for _, candidate := range []string{t, foldWidth(t)} {
		for _, p := range injection {
			if p.re.MatchString(candidate) {
				return true, p.name
			}
		}
	}
	return false, ""
}

// credentials is the seed's CREDENTIAL_PATTERNS, in order, plus bearer
// tokens (mull's addition). A pattern with a group redacts only the value
// and keeps the key name ("password = [redacted]"); the others replace the
// whole match and keep the credential's type ("[redacted:ghp]").
var credentials = []struct {
	re    *regexp.Regexp
	group bool
}{
	{regexp.MustCompile(`ghp_[A-Za-z0-9]{20,}`), false},
	{regexp.MustCompile(`github_pat_[A-Za-z0-9_]{20,}`), false},
	{regexp.MustCompile(`gho_[A-Za-z0-9]{20,}`), false},
	{regexp.MustCompile(`sk-[A-Za-z0-9_-]{20,}`), false},
	{regexp.MustCompile(`AKIA[0-9A-Z]{12,}`), false},
	{regexp.MustCompile(`AIza[0-9A-Za-z_-]{30,}`), false},
	{regexp.MustCompile(`xox[baprs]-[A-Za-z0-9-]{10,}`), false},
	{regexp.MustCompile(`eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`), false},
	{regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----`), false},
	// key = value, long unquoted values of any shape first, then quoted,
	// then short plain ones, as the seed orders them.
	{regexp.MustCompile(`(?i)\b(?:api[_-]?key|apikey|secret|access[_-]?token|password|passwd)\b` + sp + `*[:=：]` + sp + `*["']?([^` + jsSpace + `"',;]{40,})["']?`), true},
	{regexp.MustCompile(`(?i)\b(?:api[_-]?key|apikey|secret|access[_-]?token|password|passwd)\b` + sp + `*[:=：]` + sp + `*["']([^` + jsSpace + `"',;]{16,})["']`), true},
	{regexp.MustCompile(`(?i)\b(?:api[_-]?key|apikey|secret|access[_-]?token|password|passwd)\b` + sp + `*[:=：]` + sp + `*["']?([A-Za-z0-9_\-]{16,})["']?`), true},
	{regexp.MustCompile(`(?i)(?:密钥|密码|口令|凭据)` + sp + `*[:=：]` + sp + `*["']?([A-Za-z0-9_\-@#$%!*.]{12,})["']?`), true},
	{regexp.MustCompile(`(?i)\bbearer` + sp + `+([A-Za-z0-9._~+/-]{16,}=*)`), true},
}

var credentialType = regexp.MustCompile(`^(github_pat_|ghp_|gho_|ghu_|ghs_|sk-|AKIA|AIza|xox[baprs]-|eyJ|-----BEGIN)`)

// Redact replaces credentials in text with a marker that keeps their type
// but none of their characters. A memory of which key serves which service
// stays useful; the key itself must never reach a prompt or the global
// library.
func Redact(text string) (string, bool) {
	out, n := redact(text)
	return out, n > 0
}

func redact(text string) (string, int) {
	hits := 0
	for _, c := range credentials {
		matches := c.re.FindAllStringSubmatchIndex(text, -1)
		if matches == nil {
			continue
		}
		var b strings.Builder
		last := 0
		for _, at := range matches {
			b.WriteString(text[last:at[0]])
			match := text[at[0]:at[1]]
			if c.group && at[2] >= 0 {
				b.WriteString(strings.ReplaceAll(match, text[at[2]:at[3]], "[redacted]"))
			} else {
				b.WriteString("[redacted:" + credentialLabel(match) + "]")
			}
			last = at[1]
			hits++
		}
		b.WriteString(text[last:])
		text = b.String()
	}
	return text, hits
}

func credentialLabel(match string) string {
	m := credentialType.FindString(match)
	switch {
	case m == "":
		return "credential"
	case m == "eyJ":
		return "jwt"
	case m == "-----BEGIN":
		return "private-key"
	}
	return strings.TrimRight(m, "-_")
}
