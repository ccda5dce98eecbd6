// Package digest renders the memory section DSH injects into its system
// prompt, with the dsh-self-improvement seed's rules (002, buildMemorySections):
// per-section quotas filled by score, a shrink when everything does not fit,
// then whole sections dropped from the lowest priority up and the last one
// trimmed, and every dropped section named. It is pure and deterministic:
// the same Input and Options give byte-identical text, because DSH's prompt
// cache (and DeepSeek's) keys on it.
package digest

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"time"

	"github.com/mullhq/mull/learn/memory"
)

// Sections are the digest's sections, highest priority first (lower
// survives longer). They are config.DigestSections; learn does not import
// config, and a test keeps the two equal.
var Sections = []string{"handoff", "proposals", "prefetch", "principles", "hypotheses",
	"facts", "lessons", "methods", "resources", "playbooks"}

// Options mirror config.Digest; the API copies its fields in.
type Options struct {
	// Budget is the whole text's size in characters (runes), wrapper
	// included. Defaults to 3200.
	Budget int
	// Wrapper is what the fixed header and footer may take. Defaults to 260.
	// If the real wrapper is longer, the real length is reserved instead, so
	// the text never exceeds Budget.
	Wrapper int
	// MaxLines caps the entries of each section. Defaults to 40.
	MaxLines int
	// Quotas are each section's characters for its entries. A missing key
	// takes the default (handoff 700, prefetch 800, principles 600,
	// hypotheses 400, facts 900, lessons 900, methods 700, resources 700);
	// 0, or a section without a default (proposals, playbooks), means no
	// quota but MaxLines, as in the seed. An entry costs its rendered line
	// and a newline, except in prefetch, where it costs its text alone:
	// that is the unit consolidation's 800 (the seed's PREFETCH cap) counts
	// in, so everything one derive answer may write is shown.
	Quotas map[string]int
}

var defaultQuotas = map[string]int{"handoff": 700, "prefetch": 800, "principles": 600, "hypotheses": 400,
	"facts": 900, "lessons": 900, "methods": 700, "resources": 700}

// WithDefaults fills every unset option with its default.
func (o Options) WithDefaults() Options {
	o.Budget = cmp.Or(o.Budget, 3200)
	o.Wrapper = cmp.Or(o.Wrapper, 260)
	o.MaxLines = cmp.Or(o.MaxLines, 40)
	q := maps.Clone(defaultQuotas)
	maps.Copy(q, o.Quotas)
	o.Quotas = q
	return o
}

// Input is everything one digest is made of.
type Input struct {
	// Now scores recency and staleness. Pass the digest's watermark time,
	// not the wall clock, or the text (and its ETag) changes by the hour.
	Now time.Time
	// Handoff is the last session's handoff brief (3–5 lines).
	Handoff string
	// Proposals: only pending ones show, at most one (the oldest).
	Proposals []Proposal
	// Memories is the library served first: the workspace's, or under scope
	// global the global library. Invalid and quarantined ones are never shown.
	Memories []memory.Memory
	// Global is, under scope both, the global library that fills the space
	// left after Memories. Its prefetch entries are not shown: prefetch is
	// about this workspace's next session.
	Global []memory.Memory
	// Playbooks are the workspace's SOPs.
	Playbooks []Playbook
	// Lessons are the lessons in force for the session the digest is for
	// (lessons.go). Lesson kinds in Memories and Global are not shown.
	Lessons Lessons
}

// Proposal is a self-improvement proposal waiting for the user.
type Proposal struct {
	ID      string
	Summary string
	// Status is pending, accepted or rejected; "" counts as pending.
	Status string
	At     time.Time
}

// Output is a rendered digest and what happened to each section.
type Output struct {
	// Text is the section DSH injects; "" when there is nothing to say.
	Text string
	// ETag is ETag(Text).
	ETag string
	// Sections, in render order, including dropped ones.
	Sections []SectionStat
	// Dropped names the sections left out, as the text's note does.
	Dropped []string
	// Blocked counts entries the render-time quarantine check hid.
	Blocked int
	// Lessons are the ids of the lessons Text shows, ascending, never nil:
	// Lessons.InForce less those the render-time gate hid (lesson.Render's
	// Blocked), the lessons quota or MaxLines left out, and those the
	// shrink, the drop or the trim took away. A task opened against this
	// digest freezes exactly these.
	Lessons []int64
}

// SectionStat says how one section came out.
type SectionStat struct {
	Name string
	// Global marks a section of the global library (scope both).
	Global bool
	// Entries is how many entries it shows; Lines how many lines it takes
	// under its title (entries, headings, notes); Chars its size with title.
	Entries, Lines, Chars int
	// Quota is the quota it was filled against (after any shrink, 0 = none)
	// and Used what its entries took of it (Options.Quotas says what an
	// entry costs).
	Quota, Used int
	// Omitted counts live entries that did not fit (quota or MaxLines).
	Omitted int
	// Trimmed counts lines cut by the last-resort trim.
	Trimmed int
	// Dropped means the whole section was left out.
	Dropped bool
}

// ETag is a strong HTTP entity tag for a digest text: the first 64 bits of
// its SHA-256, quoted.
func ETag(text string) string {
	sum := sha256.Sum256([]byte(text))
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}
