package harness

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/trust"
)

// The seed's numbers (src/render.ts).
const (
	// MaxQueryChars caps the projection's query (MAX_QUERY_CHARS).
	MaxQueryChars = 400
	// ContentMaxChars is the projection's truncation
	// (DEFAULT_CONTENT_MAX_CHARS).
	ContentMaxChars = 180
	// RefinementsInProjection is how many recent refinements the
	// projection lists (DEFAULT_REFINEMENTS_IN_OVERVIEW).
	RefinementsInProjection = 5
	// OverviewPerKind caps each kind in the planner's overview
	// (DEFAULT_OVERVIEW_PER_KIND).
	OverviewPerKind = 40
	// HistoryInPrompt is how many refinements the planner's history
	// lists (historyForPrompt's max).
	HistoryInPrompt = 20
)

// Hidden is what stands for a stored text the trust gate withholds where
// a line must still be shown.
const Hidden = "(hidden by mull's trust gate)"

// AckPhrases are the whole-message acknowledgements the query skips, the
// seed's ACK_PHRASES verbatim (compared lower-cased).
var AckPhrases = []string{"好", "好的", "可以", "行", "收到", "明白", "继续", "谢谢", "ok", "okay", "yes", "thanks"}

// jsSpace is JavaScript's \s, so whitespace collapses as the seed's
// collapseWhitespace does.
var jsSpace = regexp.MustCompile(`[` + trust.JSSpace + `]+`)

// Query is the projection's query: the latest direct user message,
// skipping acknowledgements and punctuation-only text, whitespace
// collapsed, at most MaxQueryChars. messages are oldest first.
//
// The cap counts runes; the seed's slice counts UTF-16 units, which differ
// only outside the Basic Multilingual Plane.
func Query(messages []string) string {
	for i := len(messages) - 1; i >= 0; i-- {
		q := strings.TrimSpace(jsSpace.ReplaceAllString(messages[i], " "))
		if q == "" || punctuationOnly(q) || slices.Contains(AckPhrases, strings.ToLower(q)) {
			continue
		}
		return cutRunes(q, MaxQueryChars)
	}
	return ""
}

// punctuationOnly is the seed's isPurePunctuation: no letter, no number.
func punctuationOnly(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) })
}

// Projection is what the agent is shown of its harness.
type Projection struct {
	Text string
	// Keys are the entries shown: "<global|local>:<kind>:<id>".
	Keys []string
	// ETag is a hash of Text: the first 16 hex digits of its SHA-256.
	ETag string
}

// ProjectOptions tune Project.
type ProjectOptions struct {
	// MaxPerKind is harness.max_injected_per_kind (6); <= 0 reads as 6.
	MaxPerKind int
	// IsLocal reports whether a merged entry is the session's own; nil
	// reads as none.
	IsLocal func(k Kind, id string) bool
	// Recent are the latest refinements, newest last.
	Recent []RecentRefinement
}

// RecentRefinement is what the projection shows of a refinement: its id,
// scope, summary and counts (the store reads these columns only, not the
// applied edits, on every agent step).
type RecentRefinement struct {
	ID       string
	Scope    Scope
	Summary  string
	Applied  int
	Rejected int
}

// RecentOf is r as the projection shows it.
func RecentOf(r Refinement) RecentRefinement {
	applied, rejected := r.Counts()
	return RecentRefinement{ID: r.ID, Scope: r.Scope, Summary: r.Summary, Applied: applied, Rejected: rejected}
}

// Project ranks and renders the merged state for query (the seed's
// formatHarnessStateForPromptStructured): a title match scores 2, a
// content match 1 (the whole query, case-insensitive); ties go to the
// newer, then by id; at most MaxPerKind per kind; ContentMaxChars
// truncation; archived entries and shadowed globals (keyed LocalPrefix+id)
// are left out.
//
// Every shown text passes the render-time trust gate (trust.Line): an
// entry any of whose texts the gate withholds is left out and counted on a
// "- N hidden" line, so the agent knows something was withheld and an
// operator can find it. Entries are gated in rank order until the kind is
// full, so the cost does not grow with the harness: "- … N more" counts
// the ranked entries not reached (some of which the gate might withhold)
// and "## kind (N)" the active entries less the withheld ones found.
func Project(merged State, query string, o ProjectOptions) Projection {
	maxPerKind := cmp.Or(max(o.MaxPerKind, 0), 6)
	lines := []string{"# Continual Harness State", ""}
	var keys []string
	for _, k := range Kinds {
		var active []ranked
		for key, e := range merged[k] {
			if !e.Archived() && !strings.HasPrefix(key, LocalPrefix) {
				active = append(active, ranked{e, relevance(e, query)})
			}
		}
		slices.SortFunc(active, func(a, b ranked) int {
			return cmp.Or(b.score-a.score, b.e.UpdatedAt.Compare(a.e.UpdatedAt), strings.Compare(a.e.ID, b.e.ID))
		})
		// Gate in rank order until the kind is full: the gate is the
		// costly part, and what is not shown needs no verdict.
		var shown []string
		hidden, walked := 0, 0
		for _, r := range active {
			if len(shown) == maxPerKind {
				break
			}
			walked++
			line, ok := entryLine(r.e)
			if !ok {
				hidden++
				continue
			}
			shown = append(shown, line)
			scope := "global"
			if o.IsLocal != nil && o.IsLocal(k, r.e.ID) {
				scope = "local"
			}
			keys = append(keys, scope+":"+string(k)+":"+r.e.ID)
		}
		lines = append(lines, fmt.Sprintf("## %s (%d)", k, len(active)-hidden))
		if len(shown) == 0 {
			lines = append(lines, "- none")
		}
		lines = append(lines, shown...)
		if more := len(active) - walked; more > 0 {
			lines = append(lines, fmt.Sprintf("- … %d more", more))
		}
		if hidden > 0 {
			lines = append(lines, fmt.Sprintf("- %d hidden", hidden))
		}
		lines = append(lines, "")
	}
	lines = append(lines, fmt.Sprintf("## recent refinements (%d)", len(o.Recent)))
	if len(o.Recent) == 0 {
		lines = append(lines, "- none")
	}
	for _, r := range o.Recent[max(0, len(o.Recent)-RefinementsInProjection):] {
		counts := fmt.Sprintf("+%d", r.Applied)
		if r.Rejected > 0 {
			counts += fmt.Sprintf(", %d failed", r.Rejected)
		}
		lines = append(lines, fmt.Sprintf("- %s (%s, %s): %s", oneLineID(r.ID), r.Scope, counts, truncate(gatedLine(r.Summary), ContentMaxChars)))
	}
	text := strings.Join(lines, "\n")
	return Projection{Text: text, Keys: keys, ETag: ETag(text)}
}

type ranked struct {
	e     Entry
	score int
}

// ETag is the first 16 hex digits of the SHA-256 of text.
func ETag(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:8])
}

// relevance is the seed's relevanceScore.
func relevance(e Entry, query string) int {
	if query == "" {
		return 0
	}
	q := strings.ToLower(query)
	switch {
	case strings.Contains(strings.ToLower(e.Title), q):
		return 2
	case strings.Contains(strings.ToLower(e.Content), q):
		return 1
	}
	return 0
}

// entryLine is the seed's formatEntry ("- id vN: summary", the description
// when there is one, else the content), every text through the gate; ok
// is false when the gate withholds any of the entry's texts.
func entryLine(e Entry) (string, bool) {
	summary, other := e.Content, e.Description
	if e.Description != "" {
		summary, other = e.Description, e.Content
	}
	for _, s := range []string{e.Title, other} {
		if _, ok := gate(s); !ok {
			return "", false
		}
	}
	line, ok := gate(summary)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("- %s v%d: %s", oneLineID(e.ID), e.Version, truncate(line, ContentMaxChars)), true
}

// gate is trust.Line, with the empty text (most titles) passed for free.
func gate(s string) (string, bool) {
	if s == "" {
		return "", true
	}
	return trust.Line(s)
}

// oneLineID keeps an id (validated at write, but a store may hold
// anything) on its line.
func oneLineID(id string) string { return trust.Neutralize(trust.OneLine(id)) }

// gatedLine is a text through trust.Line, or Hidden.
func gatedLine(s string) string {
	line, ok := trust.Line(s)
	if !ok {
		return Hidden
	}
	return line
}

// Overview is the planner's and the review's view of the state (the
// seed's overviewForPrompt): every kind, archived entries and shadowed
// globals included, at most OverviewPerKind each (the newest), every text
// through the gate (a withheld entry is counted on a "- N hidden" line).
// Go maps have no order, so entries are listed oldest first by UpdatedAt,
// then id, where the seed lists insertion order.
func Overview(s State) string {
	lines := []string{"# Continual Harness State", ""}
	for _, k := range Kinds {
		es := sortedEntries(s[k])
		lines = append(lines, fmt.Sprintf("## %s (%d)", k, len(es)))
		if len(es) == 0 {
			lines = append(lines, "- none")
		}
		hidden := 0
		for _, e := range es[max(0, len(es)-OverviewPerKind):] {
			line, ok := entryLine(e)
			if !ok {
				hidden++
				continue
			}
			lines = append(lines, line)
		}
		if len(es) > OverviewPerKind {
			lines = append(lines, fmt.Sprintf("- … %d more", len(es)-OverviewPerKind))
		}
		if hidden > 0 {
			lines = append(lines, fmt.Sprintf("- %d hidden", hidden))
		}
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

func sortedEntries(m map[string]Entry) []Entry {
	es := make([]Entry, 0, len(m))
	for _, e := range m {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b Entry) int {
		return cmp.Or(a.UpdatedAt.Compare(b.UpdatedAt), strings.Compare(a.ID, b.ID), strings.Compare(string(a.Kind), string(b.Kind)))
	})
	return es
}

// History is the planner's refinement history (the seed's
// historyForPrompt): the last HistoryInPrompt refinements, oldest first,
// each summary through the gate.
func History(rs []Refinement) string {
	lines := []string{fmt.Sprintf("# Recent Harness Refinements (%d)", len(rs))}
	for _, r := range rs[max(0, len(rs)-HistoryInPrompt):] {
		rb := ""
		if r.RollbackOf != "" {
			rb = ", rollback of " + oneLineID(r.RollbackOf)
		}
		lines = append(lines, fmt.Sprintf("- %s (%s%s): %s", oneLineID(r.ID), r.Scope, rb, gatedLine(r.Summary)))
	}
	return strings.Join(lines, "\n")
}

// truncate is the seed's truncate: more than n runes keeps n and adds "…".
// (The seed counts UTF-16 units.)
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return cutRunes(s, n) + "…"
}

// cutRunes keeps the first n runes of s.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
