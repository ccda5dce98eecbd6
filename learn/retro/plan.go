package retro

import (
	"fmt"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/memory"
)

// Source is where an answer came from: the session it reviewed and the job
// that asked. Every new memory carries it.
type Source struct {
	Workspace string
	SessionID string
	JobID     int64
}

// Changes is what applying one answer does to the library, decided here and
// written by the job in one transaction. Nothing is deleted: a memory is
// added, bumped or invalidated.
type Changes struct {
	// Add are the new memories, built by memory.New with origin retro and
	// the claimed importance (scoring caps it), not stored yet (ID 0). Some
	// may be quarantined; they are stored so, never shown.
	Add []memory.Memory
	// Bump are existing memories the answer said again: the job counts the
	// repeat on them instead of adding a copy. In first-seen order, no
	// repeats.
	Bump []int64
	// Invalidate are existing memories a supersede entry names.
	Invalidate []Invalidation
	// Rejected are entries memory.New refused, for the job's log.
	Rejected []Rejected
	// Redacted counts credentials redacted from the new memories.
	Redacted int
	// Handoff replaces the workspace's previous handoff; "" keeps it.
	Handoff string
	// Playbooks are upserted by slug.
	Playbooks []Playbook
	// Proposal is nil or the one new proposal; the store keeps at most one
	// pending.
	Proposal *Proposal
}

// Invalidation marks one existing memory invalid.
type Invalidation struct {
	ID     int64
	Reason string
	// By is the index in Add of the memory that replaces it, or -1. The
	// job links memory.Memory.SupersededBy once Add is stored.
	By int
}

// Rejected is an entry that could not become a memory.
type Rejected struct {
	Kind memory.Kind
	Text string
	Err  error
}

// SupersedeReason is the reason a memory the retro of src invalidates
// carries: it names the retro, so an invalidation the plan could not link
// to a replacement can still be traced to its job.
func SupersedeReason(src Source) string {
	return fmt.Sprintf("superseded by the retro of session %s (job %d)", src.SessionID, src.JobID)
}

// minLinkSimilarity is the least bigram overlap (Dice) between an old text
// and a new one for the new one to be named its replacement.
const minLinkSimilarity = 0.3

// Plan decides how to apply an answer, which has passed Validate, to the
// library existing (the stored memories, valid and invalid, of the
// workspace the answer is about; IDs are the store's). It is pure and
// deterministic: existing is not modified. The order is the seed's intent: invalidate what
// the answer supersedes (exact text, or memory.Matches: a normalized
// substring of at least 6 characters), then add each new entry unless a
// still-valid memory of the same kind, or an earlier entry of the answer,
// says the same (memory.Duplicate), in which case the existing one is
// bumped.
func Plan(o Output, existing []memory.Memory, src Source, now time.Time) Changes {
	var c Changes
	invalid := map[int64]bool{}
	for _, s := range o.Supersede {
		for _, m := range existing {
			if m.Kind == supersedeKinds[s.Kind] && live(m, now) && !invalid[m.ID] &&
				(m.Text == s.Text || memory.Matches(s.Text, m.Text)) {
				invalid[m.ID] = true
				c.Invalidate = append(c.Invalidate, Invalidation{ID: m.ID, Reason: SupersedeReason(src), By: -1})
			}
		}
	}
	c.addEntries(o, existing, invalid, src, now)
	c.link(existing)
	c.Handoff = strings.Join(trimAll(o.Handoff), "\n")
	c.Playbooks = o.Playbooks
	if len(o.Proposal) > 0 {
		p := o.Proposal[0]
		c.Proposal = &p
	}
	return c
}

// live reports a memory that still counts: valid now and not quarantined.
func live(m memory.Memory, now time.Time) bool { return m.ValidAt(now) && !m.Quarantined }

func (c *Changes) addEntries(o Output, existing []memory.Memory, invalid map[int64]bool, src Source, now time.Time) {
	sections := []struct {
		kind    memory.Kind
		entries []Entry
	}{{memory.Lesson, o.Lessons}, {memory.Fact, o.Facts}, {memory.Resource, o.Resources}, {memory.Method, o.Methods}}
	bumped := map[int64]bool{}
	for _, s := range sections {
		for _, e := range s.entries {
			w := memory.Write{Workspace: src.Workspace, Kind: s.kind, Text: e.Text, Importance: e.Importance,
				Src: e.Src, SessionID: src.SessionID}
			m, n, err := memory.New(w, memory.Provenance{Origin: memory.OriginRetro, JobID: src.JobID}, now)
			switch {
			case err != nil:
				c.Rejected = append(c.Rejected, Rejected{Kind: s.kind, Text: e.Text, Err: err})
				continue
			case c.added(m):
				continue
			}
			if id, ok := duplicateOf(m, existing, invalid, now); ok {
				if id != 0 && !bumped[id] {
					bumped[id] = true
					c.Bump = append(c.Bump, id)
				}
				continue
			}
			c.Redacted += n
			c.Add = append(c.Add, m)
		}
	}
}

// duplicateOf finds a still-valid memory saying what n says. A quarantined
// duplicate blocks the copy but is not bumped (id 0): it stays hidden.
func duplicateOf(n memory.Memory, existing []memory.Memory, invalid map[int64]bool, now time.Time) (int64, bool) {
	for _, m := range existing {
		if m.Kind == n.Kind && m.ValidAt(now) && !invalid[m.ID] && memory.Duplicate(m.Text, n.Text) {
			if m.Quarantined {
				return 0, true
			}
			return m.ID, true
		}
	}
	return 0, false
}

// added reports whether the answer already added what n says.
func (c *Changes) added(n memory.Memory) bool {
	for _, m := range c.Add {
		if m.Kind == n.Kind && memory.Duplicate(m.Text, n.Text) {
			return true
		}
	}
	return false
}

// link names, for each invalidated memory, the new memory of the same kind
// most like it, when one is like enough.
func (c *Changes) link(existing []memory.Memory) {
	byID := map[int64]memory.Memory{}
	for _, m := range existing {
		byID[m.ID] = m
	}
	for i, inv := range c.Invalidate {
		old := byID[inv.ID]
		best := minLinkSimilarity
		for j, m := range c.Add {
			if s := similarity(old.Text, m.Text); m.Kind == old.Kind && !m.Quarantined && s >= best {
				if s > best || c.Invalidate[i].By == -1 {
					best, c.Invalidate[i].By = s, j
				}
			}
		}
	}
}

// similarity is the Dice coefficient of the normalized texts' rune bigrams:
// it works for text without spaces (Chinese) as well as for words.
func similarity(a, b string) float64 {
	ba, bb := bigrams(memory.Normalize(a)), bigrams(memory.Normalize(b))
	if len(ba) == 0 || len(bb) == 0 {
		return 0
	}
	common := 0
	for g, n := range ba {
		common += min(n, bb[g])
	}
	total := 0
	for _, n := range ba {
		total += n
	}
	for _, n := range bb {
		total += n
	}
	return 2 * float64(common) / float64(total)
}

func bigrams(s string) map[[2]rune]int {
	r := []rune(s)
	g := map[[2]rune]int{}
	for i := 0; i+1 < len(r); i++ {
		g[[2]rune{r[i], r[i+1]}]++
	}
	return g
}

func trimAll(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Refused reports whether a proposal repeats one the user already rejected:
// its summary and a rejected one's match by memory.Matches (equal once
// normalized, or one holds the other). The seed writes a rejection back as
// a lesson so the agent stops asking; a retro that proposes it again
// anyway is not put before the user again.
func Refused(p Proposal, rejected []string) bool {
	for _, r := range rejected {
		if memory.Matches(p.Summary, r) || memory.Matches(r, p.Summary) {
			return true
		}
	}
	return false
}
