package retro

import (
	"fmt"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/trust"
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
	// Rejected are entries refused on their own (a text neither database
	// can store, a bad shape, a field memory.New refuses): the rest of the
	// answer applies without them.
	Rejected []Rejected
	// Redacted counts the credentials the trust gate redacted, in every
	// text the plan stores.
	Redacted int
	// Quarantined counts the texts the trust gate quarantined: the new
	// memories in Add so flagged, and Held.
	Quarantined int
	// Held are the quarantined texts with no flagged row of their own (the
	// handoff, a playbook, the proposal, a supersede target): the job
	// keeps them in the quarantine table, never served.
	Held []Held
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

// Rejected is an entry that could not be applied; Err names its field.
type Rejected struct {
	// Kind is the memory kind, or "" for an entry that is not a memory.
	Kind memory.Kind
	Text string
	Err  error
}

// Held is a quarantined text kept for review: what the gate stored
// (credentials redacted) and why.
type Held struct {
	// Kind is handoff, playbook, proposal or supersede.
	Kind, Text, Reason string
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
	for i, s := range o.Supersede {
		text, ok := c.gate("supersede", fmt.Sprintf("supersede[%d]", i), s.Text, checkSupersede(fmt.Sprintf("supersede[%d]", i), s))
		if !ok {
			continue
		}
		for _, m := range existing {
			if m.Kind == supersedeKinds[s.Kind] && live(m, now) && !invalid[m.ID] &&
				(m.Text == text || memory.Matches(text, m.Text)) {
				invalid[m.ID] = true
				c.Invalidate = append(c.Invalidate, Invalidation{ID: m.ID, Reason: SupersedeReason(src), By: -1})
			}
		}
	}
	c.addEntries(o, existing, invalid, src, now)
	c.link(existing)
	if len(o.Handoff) > 0 {
		c.Handoff, _ = c.gate("handoff", "handoff", strings.Join(trimAll(o.Handoff), "\n"), checkHandoff(o.Handoff))
	}
	c.planPlaybooks(o.Playbooks)
	for _, p := range o.Proposal {
		c.planProposal(p)
	}
	return c
}

// gate passes one text that is not a memory through the trust gate once
// its own check (err) passed: refused on err, held on quarantine, else
// returned redacted, with the counts kept.
func (c *Changes) gate(kind, field, text string, err error) (string, bool) {
	if err != nil {
		c.Rejected = append(c.Rejected, Rejected{Text: text, Err: err})
		return "", false
	}
	v := trust.Check(text)
	c.Redacted += v.Redacted
	if v.Quarantined {
		c.Quarantined++
		c.Held = append(c.Held, Held{Kind: kind, Text: v.Text, Reason: field + ": " + v.Reason})
		return "", false
	}
	return v.Text, true
}

// planPlaybooks keeps the playbooks whose slug and steps pass their checks
// and the gate, each step redacted; a slug that holds a credential is
// refused (redacting it would leave no slug).
func (c *Changes) planPlaybooks(ps []Playbook) {
	seen := map[string]int{}
	for i, p := range ps {
		f := fmt.Sprintf("playbooks[%d]", i)
		err := checkPlaybook(f, p, seen)
		if err == nil {
			seen[p.Slug] = i
			if v := trust.Check(p.Slug); v.Redacted > 0 || v.Text != p.Slug {
				err = bad(f+".slug", "holds a credential")
			}
		}
		whole := p.Slug + ": " + strings.Join(p.Steps, "\n")
		text, ok := c.gate("playbook", f, whole, err)
		if !ok {
			continue
		}
		_, body, _ := strings.Cut(text, ": ")
		steps := strings.Split(body, "\n")
		if len(steps) != len(p.Steps) {
			// The gate changed the line structure: gate each step alone.
			steps = steps[:0]
			for _, st := range p.Steps {
				steps = append(steps, memory.OneLine(trust.Check(st).Text))
			}
		}
		c.Playbooks = append(c.Playbooks, Playbook{Slug: p.Slug, Steps: steps})
	}
}

// planProposal keeps the proposal when it passes its checks and the gate,
// summary and detail redacted.
func (c *Changes) planProposal(p Proposal) {
	text, ok := c.gate("proposal", "proposal", p.Summary+"\n"+p.Detail, checkProposal(p))
	if !ok {
		return
	}
	summary, detail, _ := strings.Cut(text, "\n")
	c.Proposal = &Proposal{Summary: strings.TrimSpace(summary), Detail: strings.TrimSpace(detail)}
}

// live reports a memory that still counts: valid now and not quarantined.
func live(m memory.Memory, now time.Time) bool { return m.ValidAt(now) && !m.Quarantined }

func (c *Changes) addEntries(o Output, existing []memory.Memory, invalid map[int64]bool, src Source, now time.Time) {
	bumped := map[int64]bool{}
	for _, s := range memorySections(o) {
		for i, e := range s.entries {
			if err := checkEntry(fmt.Sprintf("%s[%d]", s.name, i), e, s.check); err != nil {
				c.Rejected = append(c.Rejected, Rejected{Kind: s.kind, Text: e.Text, Err: err})
				continue
			}
			w := memory.Write{Workspace: src.Workspace, Kind: s.kind, Text: e.Text, Importance: e.Importance,
				Src: e.Src, SessionID: src.SessionID}
			m, n, err := memory.New(w, memory.Provenance{Origin: memory.OriginRetro, JobID: src.JobID}, now)
			switch {
			case err != nil:
				c.Rejected = append(c.Rejected, Rejected{Kind: s.kind, Text: e.Text,
					Err: fmt.Errorf("%s[%d]: %w", s.name, i, err)})
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
			if m.Quarantined {
				c.Quarantined++
			}
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
