package memory

import (
	"regexp"
	"time"
)

// UntrustedCap is the most importance an untrusted or stale memory keeps,
// so it cannot crowd out trusted ones by claiming a high importance.
const UntrustedCap = 5

// Score is the seed's lineScore: importance + recency + min(uses, 5) × 0.5.
// It orders memories when a section has less room than it has entries.
func Score(m Memory, now time.Time) float64 {
	uses := min(max(m.Uses, 0), 5)
	return float64(Importance(m, now)+Recency(m.RecordedAt, now)) + float64(uses)*0.5
}

// Importance is m's importance (or its kind's default), capped at
// UntrustedCap when m is untrusted or stale.
func Importance(m Memory, now time.Time) int {
	imp := m.Importance
	if imp == 0 {
		imp = m.Kind.DefaultImportance()
	}
	if Untrusted(m) || Stale(m, now) {
		imp = min(imp, UntrustedCap)
	}
	return imp
}

// Untrusted follows the seed's isUntrustedEntry, in its order: an external
// src (web, tool, doc) is untrusted whatever the origin; otherwise src user
// vouches for it; otherwise an LLM-made origin (retro, sleep, and mull's
// import) is untrusted. (The seed's "or origin command" clause is left out:
// command is not an LLM-made origin, so it changes no answer, and mull's one
// command write, a rejected proposal's lesson, carries src user anyway.)
func Untrusted(m Memory) bool {
	switch {
	case m.Src.External():
		return true
	case m.Src == SrcUser:
		return false
	}
	return m.Origin.Untrusted()
}

// Recency is 5 under a day old, 4 under 7 days, 3 under 30, 2 under 180,
// otherwise 1; an unknown (zero) time scores 1.
func Recency(recordedAt, now time.Time) int {
	if recordedAt.IsZero() {
		return 1
	}
	days := now.Sub(recordedAt).Hours() / 24
	switch {
	case days < 1:
		return 5
	case days < 7:
		return 4
	case days < 30:
		return 3
	case days < 180:
		return 2
	}
	return 1
}

// Stale reports whether m is past its TTL: more than TTL days since it was
// last verified (or recorded). A stale memory is still shown, marked, and
// scored at most UntrustedCap: "this key was revoked" is itself knowledge.
func Stale(m Memory, now time.Time) bool {
	ttl := TTL(m)
	if ttl <= 0 {
		return false
	}
	base := m.VerifiedAt
	if base.IsZero() {
		base = m.RecordedAt
	}
	if base.IsZero() {
		return false
	}
	return now.Sub(base) > time.Duration(ttl)*24*time.Hour
}

// TTL is m's freshness period in days: its own, or the one its text implies.
// The seed stamped ttl at write and treated lines without one as timeless;
// every mull write goes through New, which stamps it, so an unset TTL here
// can only be a store that forgot, and the text's volatility is the safer
// answer. NeverStale opts out.
func TTL(m Memory) int {
	switch {
	case m.TTLDays == NeverStale:
		return 0
	case m.TTLDays > 0:
		return m.TTLDays
	}
	return Volatility(m.Text)
}

// volatility is the seed's TTL_RULES: the first rule whose pattern appears
// in the text sets the TTL.
var volatility = []struct {
	days int
	re   *regexp.Regexp
}{
	{30, regexp.MustCompile(`(?i)(api[` + jsSpace + `_-]?key|apikey|token|密钥|password|密码|凭据|secret|凭证)`)},
	{90, regexp.MustCompile(`(?i)(端点|endpoint|base[` + jsSpace + `_-]?url|域名|host|模型名|model` + sp + `*[:=]|配额|quota|价格|计费|pricing|版本号|version)`)},
	{180, regexp.MustCompile(`(?i)(https?://|接口|API|服务|平台|账号|订阅|套餐)`)},
}

// DefaultTTLDays is the TTL of text that names nothing volatile.
const DefaultTTLDays = 180

// Volatility is how many days a statement stays fresh, judged from what it
// talks about: credentials 30, endpoints, models, quotas and prices 90, URLs
// and services 180, anything else 180.
func Volatility(text string) int {
	for _, r := range volatility {
		if r.re.MatchString(text) {
			return r.days
		}
	}
	return DefaultTTLDays
}
