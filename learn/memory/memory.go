// Package memory holds the pure rules of mull's memory store: what a memory
// is, how one is checked, guarded and scored, and how duplicates are told
// apart. The rules come from the dsh-self-improvement seed (002) and keep its
// numbers; the store and the HTTP API build on these types and never
// re-implement a rule. No SQL, no River, no HTTP here.
package memory

import (
	"strings"
	"time"

	"github.com/mullhq/mull/learn/trust"
)

// Kind says what a memory is about. The retro job writes the first five; the
// sleep-time consolidation job writes principle, hypothesis and prefetch.
type Kind string

// The kinds.
const (
	Fact       Kind = "fact"
	Preference Kind = "preference"
	Lesson     Kind = "lesson"
	Resource   Kind = "resource"
	Method     Kind = "method"
	Principle  Kind = "principle"
	Hypothesis Kind = "hypothesis"
	Prefetch   Kind = "prefetch"
)

// Kinds lists every kind, in the order sections show them.
var Kinds = []Kind{Prefetch, Principle, Hypothesis, Fact, Preference, Lesson, Method, Resource}

// DefaultImportance is the importance a memory without its own gets. The
// first five are the seed's (KIND_IMPORTANCE). The seed never scored the
// sleep-time kinds (it kept them as free text), so mull picks: a principle is
// a distilled method (6), a hypothesis is unverified by definition (4), and
// prefetch sits with plain facts (5). Sleep writes them with origin sleep, so
// the untrusted cap of 5 applies anyway; the defaults only matter for an
// operator's own entries. An unknown kind gets 5, as in the seed.
func (k Kind) DefaultImportance() int {
	switch k {
	case Preference:
		return 8
	case Lesson:
		return 7
	case Method, Principle:
		return 6
	case Hypothesis:
		return 4
	}
	return 5
}

// SleepTime reports whether only consolidation (or a human) writes this kind.
func (k Kind) SleepTime() bool { return k == Principle || k == Hypothesis || k == Prefetch }

// Src is where the writer claims the content came from. mull records the
// claim but trusts Origin, which it sets itself.
type Src string

// The sources a writer may claim; "" claims nothing.
const (
	SrcUser  Src = "user"
	SrcAgent Src = "agent"
	SrcWeb   Src = "web"
	SrcTool  Src = "tool"
	SrcDoc   Src = "doc"
)

// External reports a source whose content is reference only (web, tool, doc).
func (s Src) External() bool { return s == SrcWeb || s == SrcTool || s == SrcDoc }

// Origin is the path that wrote a memory, set by mull and never by the
// caller, so a model cannot launder its own output as the user's.
type Origin string

// The origins. The first five are the seed's; OriginImport is mull's own.
const (
	// OriginTool is the agent's remember tool, through the DSH bridge.
	OriginTool Origin = "tool"
	// OriginCommand is a human's slash command, through the bridge: trusted.
	OriginCommand Origin = "command"
	// OriginRetro is the retro_session / retro_error jobs.
	OriginRetro Origin = "retro"
	// OriginSleep is the consolidate job (sleep-time compute).
	OriginSleep Origin = "sleep"
	// OriginPanel is an operator through mull's CLI or admin API: the seed's
	// web panel, where a human edits memory directly.
	OriginPanel Origin = "panel"
	// OriginImport is `mull import` of a seed memory file whose line carried
	// no origin of its own. Nobody vouches for it, so it scores as untrusted.
	OriginImport Origin = "import"
)

// Untrusted reports an origin whose output is an LLM's (or nobody's) word.
func (o Origin) Untrusted() bool { return o == OriginRetro || o == OriginSleep || o == OriginImport }

// Memory is one remembered item, as the store keeps it. Two timelines: when
// mull recorded it (RecordedAt) and when it stopped being valid (InvalidAt);
// nothing is ever deleted.
type Memory struct {
	ID int64 `json:"id"`
	// Workspace is the DSH cwd it belongs to; "" is the global library.
	Workspace string `json:"workspace"`
	Kind      Kind   `json:"kind"`
	Text      string `json:"text"`
	// Importance is 1–10; 0 means the kind's default.
	Importance int    `json:"importance,omitempty"`
	Src        Src    `json:"src,omitempty"`
	Origin     Origin `json:"origin"`
	// Uses counts searches that hit it; it raises the score up to 5 uses.
	Uses      int    `json:"uses"`
	SessionID string `json:"session_id,omitempty"`
	// JobID is the River job that wrote it, when a job did.
	JobID      int64     `json:"job_id,omitempty"`
	RecordedAt time.Time `json:"recorded_at"`
	// VerifiedAt is when it was last confirmed; zero means RecordedAt.
	VerifiedAt time.Time `json:"verified_at,omitzero"`
	// VerifiedBy is who made the last verification: an actor of the store
	// ("admin (panel)", "admin (api)", "admin (cli)", "agent") or
	// VerifiedByMerge; "" when never verified or verified before mull
	// recorded who verifies.
	VerifiedBy string `json:"verified_by,omitempty"`
	// TTLDays is how long it stays fresh after VerifiedAt. 0 means derive it
	// from the text (Volatility); NeverStale turns staleness off.
	TTLDays       int       `json:"ttl_days,omitempty"`
	InvalidAt     time.Time `json:"invalid_at,omitzero"`
	InvalidReason string    `json:"invalid_reason,omitempty"`
	SupersededBy  int64     `json:"superseded_by,omitempty"`
	// Quarantined memories are kept for review and never shown.
	Quarantined      bool   `json:"quarantined,omitempty"`
	QuarantineReason string `json:"quarantine_reason,omitempty"`
	// PromotedFrom names the workspace a global copy was promoted from.
	PromotedFrom string `json:"promoted_from,omitempty"`

	// The lesson model (seed 000; see lesson.go). Zero for other kinds.

	// Scope is who a structured lesson is shown to; "" for other kinds,
	// whose Workspace alone says it.
	Scope LessonScope `json:"scope,omitempty"`
	// ScopeSession is the named session of a LessonSession lesson, or the
	// source session of a LessonReflection one.
	ScopeSession string `json:"scope_session,omitempty"`
	// Lesson holds the structured fields; nil for other kinds and for a
	// free-text lesson written before the lesson model.
	Lesson *LessonFields `json:"lesson,omitempty"`
	// TaskID is the task whose reflection wrote it.
	TaskID string `json:"task_id,omitempty"`
	// State is the lifecycle; "" reads as active, or superseded when
	// InvalidAt is set.
	State State `json:"state,omitempty"`
	// PromotedFromID is the lesson this one was promoted from. Promotion is
	// a state transition: the source stays (history) but stops being served
	// on the paths this one covers.
	PromotedFromID int64 `json:"promoted_from_id,omitempty"`
}

// VerifiedByMerge is a consolidation merge's VerifiedBy when the
// VerifiedAt it carries is its newest source's record time: its freshness,
// no one's verification (store.VerifiedByMerge, the same text).
const VerifiedByMerge = "consolidation (a source's record time)"

// NeverStale as TTLDays keeps a memory from ever going stale.
const NeverStale = -1

// MaxReasonRunes caps InvalidReason, as the seed capped `why`.
const MaxReasonRunes = 60

// Global reports whether m belongs to the global library.
func (m Memory) Global() bool { return m.Workspace == "" }

// ValidAt reports whether m was believed at t: recorded by then and not yet
// invalidated. Passing the digest's watermark as t answers "what did the
// agent know then".
func (m Memory) ValidAt(t time.Time) bool {
	recorded := m.RecordedAt.IsZero() || !m.RecordedAt.After(t)
	return recorded && (m.InvalidAt.IsZero() || m.InvalidAt.After(t))
}

// Invalidated returns m marked invalid at at, for reason, optionally
// superseded by another memory. A memory already invalid keeps its first
// invalidation: history is not rewritten.
func (m Memory) Invalidated(at time.Time, reason string, supersededBy int64) Memory {
	if !m.InvalidAt.IsZero() {
		return m
	}
	m.InvalidAt = at.UTC()
	m.InvalidReason = cutRunes(strings.TrimSpace(gatedReason(reason)), MaxReasonRunes)
	m.SupersededBy = supersededBy
	return m
}

// gatedReason is an invalidation reason through the trust gate: the agent
// writes it and verify's refusal shows it back, so a credential in it is
// redacted and an instruction-like one is not kept.
func gatedReason(reason string) string {
	v := trust.Check(reason)
	if v.Quarantined {
		return "reason withheld by the trust gate (" + v.Reason + ")"
	}
	return trust.OneLine(v.Text)
}

func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
