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
	// Dropped are the ids of the answer that were not applied, each with
	// its reason; the entry that named one applies without it.
	Dropped []DroppedRef
	// RepeatsByID counts the entries bumped onto the memory the model said
	// they repeat, and SupersedesByID the memories invalidated by id: what
	// the model decided instead of mull's text checks.
	RepeatsByID, SupersedesByID int
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
	// Field is the answer's path that named it ("supersede[1].id",
	// "facts[0].supersedes[2]"), ByID whether it named it by id, and
	// Evidence the task ids that entry gave (GatePrecedent reads them).
	Field    string
	ByID     bool
	Evidence []string
}

// Rejected is an entry that could not be applied; Err names its field.
type Rejected struct {
	// Kind is the memory kind, or "" for an entry that is not a memory.
	Kind memory.Kind
	// Field is the entry's path in the answer ("facts[2]", "handoff",
	// "supersede[1].why"): mull's words, never the model's.
	Field string
	Text  string
	Err   error
}

// DroppedRef is an id of an answer that Plan did not apply.
type DroppedRef struct {
	// Field is its JSON path, as "facts[2].supersedes[0]".
	Field string
	// Ref is what the model wrote.
	Ref Ref
	// Reason is one of the Drop* reasons.
	Reason string
	// Detail says more where the reason has parts: DropPrecedent's
	// refused check ("no_evidence: …").
	Detail string `json:",omitempty"`
}

// The reasons an id of an answer is dropped. The model only ever sees the
// library of one workspace as its digest published it, so every id it may
// name is in Shown; the others are untrusted input, refused one by one.
const (
	// DropMalformed: not an id (a word, a negative number, a fraction).
	DropMalformed = "malformed"
	// DropUnknown: not an id of the library shown: another workspace's,
	// one newer than the digest, or made up.
	DropUnknown = "unknown"
	// DropNotLive: shown, but invalidated (or quarantined) since, by
	// another writer or by this answer itself.
	DropNotLive = "not_live"
	// DropConflict: an entry that repeats a memory cannot also supersede.
	DropConflict = "conflict"
	// DropRefused: the entry that named it was rejected or quarantined, or
	// repeats an earlier entry of the answer, so it decides nothing.
	DropRefused = "entry_refused"
)

// DroppedCounts sums Dropped by reason; nil when none was dropped.
func (c Changes) DroppedCounts() map[string]int {
	var n map[string]int
	for _, d := range c.Dropped {
		if n == nil {
			n = map[string]int{}
		}
		n[d.Reason]++
	}
	return n
}

// Held is a quarantined text kept for review: what the gate stored
// (credentials redacted) and why.
type Held struct {
	// Kind is handoff, playbook, proposal or supersede.
	Kind, Text, Reason string
}

// SupersedeReason is the reason a memory the retro of src invalidates
// carries when the model gave none: it names the retro's job, so an
// invalidation the plan could not link to a replacement can still be
// traced to it. It fits memory.MaxReasonRunes.
func SupersedeReason(src Source) string {
	return fmt.Sprintf("superseded by retro job %d", src.JobID)
}

// supersedeReason is the reason with the model's why, after the job's id;
// invalidate passes it through the gate and cuts it to
// memory.MaxReasonRunes.
func supersedeReason(src Source, why string) string {
	if why = strings.TrimSpace(why); why == "" {
		return SupersedeReason(src)
	}
	return fmt.Sprintf("retro job %d: %s", src.JobID, why)
}

// minLinkSimilarity is the least bigram overlap (Dice) between an old text
// and a new one for the new one to be named its replacement.
const minLinkSimilarity = 0.3

// Plan is PlanShown for an answer to a prompt that showed no library: every
// id it names is dropped as unknown, and mull's text checks decide.
func Plan(o Output, existing []memory.Memory, src Source, now time.Time) Changes {
	return PlanShown(o, existing, nil, src, now)
}

// PlanShown decides how to apply an answer, which has passed Validate, to
// the library existing (the stored memories, valid and invalid, of the
// workspace the answer is about; IDs are the store's). shown are the ids
// the prompt's library listed (Library.Shown): the only ones the answer's
// ids may name. It is pure and deterministic: existing is not modified.
//
// The order is the seed's intent. First invalidate what the answer
// supersedes: by id, or by text (exact, or memory.Matches: a normalized
// substring of at least 6 characters). Then each new entry: one that says
// it repeats a live memory shown bumps it; one that says it supersedes
// memories shown invalidates them and is added, linked as their
// replacement; one that says neither (or only names ids that are dropped)
// is added unless a still-valid memory of the same kind, or an earlier
// entry of the answer, says the same (memory.Duplicate), in which case the
// existing one is bumped: mull's text check, the fallback when the model
// says nothing.
func PlanShown(o Output, existing []memory.Memory, shown map[int64]memory.Kind, src Source, now time.Time) Changes {
	p := &planner{src: src, now: now, shown: shown, invalid: map[int64]bool{}, byID: map[int64]memory.Memory{}}
	for _, m := range existing {
		p.byID[m.ID] = m
	}
	c := &p.c
	for i, s := range o.Supersede {
		p.supersede(fmt.Sprintf("supersede[%d]", i), s, existing)
	}
	p.addEntries(o, existing)
	c.link(existing)
	if len(o.Handoff) > 0 {
		c.Handoff, _ = c.gate("handoff", "handoff", strings.Join(trimAll(o.Handoff), "\n"), checkHandoff(o.Handoff))
	}
	c.planPlaybooks(o.Playbooks)
	for _, pr := range o.Proposal {
		c.planProposal(pr)
	}
	return p.c
}

// planner is one PlanShown's state.
type planner struct {
	c       Changes
	src     Source
	now     time.Time
	shown   map[int64]memory.Kind
	byID    map[int64]memory.Memory
	invalid map[int64]bool
	bumped  map[int64]bool
}

// supersede plans one entry of the supersede section.
func (p *planner) supersede(f string, s Supersede, existing []memory.Memory) {
	c := &p.c
	err := checkSupersede(f, s)
	if !s.ID.IsZero() {
		why := s.Why
		if err != nil || why != "" {
			var ok bool
			if why, ok = c.gate("supersede", f+".why", s.Why, err); !ok {
				p.drop(f+".id", s.ID, DropRefused)
				return
			}
		}
		if m, ok := p.resolve(f+".id", s.ID); ok {
			p.cite(p.invalidate(m, why, -1), f+".id", true, s.Evidence)
			c.SupersedesByID++
		}
		return
	}
	text, ok := c.gate("supersede", f, s.Text, err)
	if !ok {
		return
	}
	why := ""
	if s.Why != "" { // checkSupersede passed it; the gate decides whether it is kept
		if why, ok = c.gate("supersede", f+".why", s.Why, nil); !ok {
			why = ""
		}
	}
	for _, m := range existing {
		if m.Kind == supersedeKinds[s.Kind] && live(m, p.now) && !p.invalid[m.ID] &&
			(m.Text == text || memory.Matches(text, m.Text)) {
			p.cite(p.invalidate(m, why, -1), f, false, s.Evidence)
		}
	}
}

// resolve finds the live memory an id of the answer names, or drops the id
// with its reason.
func (p *planner) resolve(field string, r Ref) (memory.Memory, bool) {
	m, ok := p.byID[r.ID]
	_, wasShown := p.shown[r.ID]
	switch {
	case r.Malformed():
		p.drop(field, r, DropMalformed)
	case !wasShown || !ok:
		p.drop(field, r, DropUnknown)
	case !live(m, p.now) || p.invalid[m.ID]:
		p.drop(field, r, DropNotLive)
	default:
		return m, true
	}
	return memory.Memory{}, false
}

func (p *planner) drop(field string, r Ref, reason string) {
	p.c.Dropped = append(p.c.Dropped, DroppedRef{Field: field, Ref: r, Reason: reason})
}

// invalidate plans m's invalidation, its reason through the gate and cut
// as every invalidation reason is (memory.Memory.Invalidated), and returns
// its index in Invalidate.
func (p *planner) invalidate(m memory.Memory, why string, by int) int {
	p.invalid[m.ID] = true
	reason := m.Invalidated(p.now, supersedeReason(p.src, why), 0).InvalidReason
	p.c.Invalidate = append(p.c.Invalidate, Invalidation{ID: m.ID, Reason: reason, By: by})
	return len(p.c.Invalidate) - 1
}

// cite records which field of the answer named invalidation j, and the
// evidence it gave.
func (p *planner) cite(j int, field string, byID bool, evidence []string) {
	inv := &p.c.Invalidate[j]
	inv.Field, inv.ByID, inv.Evidence = field, byID, evidence
}

// gate passes one text that is not a memory through the trust gate once
// its own check (err) passed: refused on err, held on quarantine, else
// returned redacted, with the counts kept.
func (c *Changes) gate(kind, field, text string, err error) (string, bool) {
	if err != nil {
		c.Rejected = append(c.Rejected, Rejected{Field: field, Text: text, Err: err})
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

func (p *planner) addEntries(o Output, existing []memory.Memory) {
	p.bumped = map[int64]bool{}
	for _, s := range memorySections(o) {
		for i, e := range s.entries {
			p.addEntry(fmt.Sprintf("%s[%d]", s.name, i), s, e, existing)
		}
	}
}

// addEntry plans one new entry of a memory section (see PlanShown).
func (p *planner) addEntry(f string, s memSection, e Entry, existing []memory.Memory) {
	c := &p.c
	refused := func() {
		if !e.Repeats.IsZero() {
			p.drop(f+".repeats", e.Repeats, DropRefused)
		}
		for k, r := range e.Supersedes {
			p.drop(fmt.Sprintf("%s.supersedes[%d]", f, k), r, DropRefused)
		}
	}
	if err := checkEntry(f, e, s.check); err != nil {
		c.Rejected = append(c.Rejected, Rejected{Kind: s.kind, Field: f, Text: e.Text, Err: err})
		refused()
		return
	}
	w := memory.Write{Workspace: p.src.Workspace, Kind: s.kind, Text: e.Text, Importance: e.Importance,
		Src: e.Src, SessionID: p.src.SessionID}
	m, n, err := memory.New(w, memory.Provenance{Origin: memory.OriginRetro, JobID: p.src.JobID}, p.now)
	if err == nil && s.kind == memory.Lesson {
		// One kind of lesson in mull: the retro's line becomes fields.
		var more int
		m, more, err = Structure(m, p.now)
		n += more
	}
	switch {
	case err != nil:
		c.Rejected = append(c.Rejected, Rejected{Kind: s.kind, Field: f, Text: e.Text, Err: fmt.Errorf("%s: %w", f, err)})
		refused()
		return
	case c.added(m):
		refused()
		return
	case m.Quarantined:
		// An instruction-like entry decides nothing about other memories:
		// it is stored flagged, unless a copy is already known.
		refused()
	case !e.Repeats.IsZero():
		if old, ok := p.resolve(f+".repeats", e.Repeats); ok {
			p.bump(old.ID)
			c.RepeatsByID++
			for k, r := range e.Supersedes {
				p.drop(fmt.Sprintf("%s.supersedes[%d]", f, k), r, DropConflict)
			}
			return
		}
	}
	var replaces []int
	if !m.Quarantined {
		for k, r := range e.Supersedes {
			field := fmt.Sprintf("%s.supersedes[%d]", f, k)
			if old, ok := p.resolve(field, r); ok {
				j := p.invalidate(old, "", -1)
				p.cite(j, field, true, e.Evidence)
				replaces = append(replaces, j)
				c.SupersedesByID++
			}
		}
	}
	if id, ok := duplicateOf(m, existing, p.invalid, p.now); ok {
		if id != 0 {
			p.bump(id)
		}
		return
	}
	c.Redacted += n
	if m.Quarantined {
		c.Quarantined++
	}
	c.Add = append(c.Add, m)
	for _, j := range replaces {
		c.Invalidate[j].By = len(c.Add) - 1
	}
}

// bump plans one more use of an existing memory, once per answer.
func (p *planner) bump(id int64) {
	if !p.bumped[id] {
		p.bumped[id] = true
		p.c.Bump = append(p.c.Bump, id)
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
		if inv.By >= 0 {
			continue // the model named its replacement
		}
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
