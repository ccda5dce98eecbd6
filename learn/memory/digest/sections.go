package digest

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/trust"
)

// renderer holds one render's inputs, prepared once: every entry is checked,
// cleaned and scored before any pass, so a rebuild cannot count a blocked
// entry twice.
type renderer struct {
	opts      Options
	now       time.Time
	blocked   int
	handoff   string
	proposal  []string
	playbooks []cand
	lessons   []lessonBlock
	// gated holds the render-time gate's answer per text, so an entry's
	// text is checked once though guarded and clean both need it.
	gated map[string]gatedLine
}

type gatedLine struct {
	line string
	ok   bool
}

// line is trust.Line on s, once per text and render.
func (r *renderer) line(s string) (string, bool) {
	if g, hit := r.gated[s]; hit {
		return g.line, g.ok
	}
	l, ok := trust.Line(s)
	if r.gated == nil {
		r.gated = map[string]gatedLine{}
	}
	r.gated[s] = gatedLine{l, ok}
	return l, ok
}

// library is one memory library's candidates, by section.
type library struct {
	global bool
	cands  map[string][]cand
}

func (l *library) empty() bool { return len(l.cands) == 0 }

// part is one rendered section.
type part struct {
	name     string
	global   bool
	priority int
	text     string
	// keys are the duplicate keys of the memories it shows.
	keys []string
	stat SectionStat
	// shown are, for the lessons section, the lessons its entries show.
	shown []shownLesson
}

// scaled sections are rebuilt with smaller quotas when the digest is over
// budget; the others (session state and sleep-time products) keep theirs, as
// in the seed, which protected them as the most expensive to rebuild.
func scaled(name string) bool {
	return name == "facts" || name == "lessons" || name == "methods" || name == "resources"
}

// priority orders sections: lower survives longer; the global library comes
// after every section of the workspace's.
func priority(name string, global bool) int {
	p := slices.Index(Sections, name)
	if global {
		p += 100
	}
	return p
}

func sectionOf(k memory.Kind) string {
	switch k {
	case memory.Fact, memory.Preference:
		return "facts"
	case memory.Lesson:
		return "lessons"
	case memory.Method:
		return "methods"
	case memory.Resource:
		return "resources"
	case memory.Principle:
		return "principles"
	case memory.Hypothesis:
		return "hypotheses"
	case memory.Prefetch:
		return "prefetch"
	}
	return ""
}

func (r *renderer) prepare(in Input) {
	if h := strings.TrimSpace(in.Handoff); h != "" {
		// The handoff is free text: the gate on the whole, then each line
		// an item of its own, "- " first, like every other entry.
		if ls, ok := trust.Block(h); !ok {
			r.blocked++
		} else {
			for i, l := range ls {
				ls[i] = "- " + escape(l)
			}
			r.handoff = strings.Join(ls, "\n")
		}
	}
	r.prepareProposal(in.Proposals)
	r.prepareLessons(in.Lessons)
	ps := slices.Clone(in.Playbooks)
	SortPlaybooks(ps, r.now)
	for i, p := range ps {
		if r.guarded(p.Slug, p.Summary) || strings.TrimSpace(p.Slug) == "" {
			continue
		}
		line := "- " + r.clean(p.Slug)
		if s := r.clean(p.Summary); s != "" {
			line += ": " + shorten(s, 120)
		}
		line += " (" + strconv.Itoa(p.Successes) + " ok, " + strconv.Itoa(p.Fails) + " failed)"
		if p.Stale(r.now) {
			line += markStale
		}
		r.playbooks = append(r.playbooks, cand{line: line, score: float64(-i), index: i})
	}
}

func (r *renderer) prepareProposal(ps []Proposal) {
	var pending []Proposal
	for _, p := range ps {
		if p.Status == "" || p.Status == "pending" {
			pending = append(pending, p)
		}
	}
	slices.SortStableFunc(pending, func(a, b Proposal) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.ID, b.ID))
	})
	for i, p := range pending {
		if r.guarded(p.ID, p.Summary) {
			continue
		}
		line := "- " + shorten(r.clean(p.Summary), maxSummaryRunes)
		if p.ID != "" {
			line = "- " + r.clean(p.ID) + ": " + line[2:]
		}
		r.proposal = []string{line}
		if more := len(pending) - i - 1; more > 0 {
			r.proposal = append(r.proposal, "(+"+strconv.Itoa(more)+" more pending)")
		}
		r.proposal = append(r.proposal, proposalTail)
		return
	}
}

// guarded runs the render-time gate (trust.Line) on an entry's texts; a
// text it refuses hides the entry.
func (r *renderer) guarded(texts ...string) bool {
	for _, t := range texts {
		if _, ok := r.line(t); !ok {
			r.blocked++
			return true
		}
	}
	return false
}

// library prepares one library: live, not quarantined (flagged at write or
// caught now), in recorded order, rendered and scored.
func (r *renderer) library(ms []memory.Memory, global bool) *library {
	sorted := slices.Clone(ms)
	slices.SortStableFunc(sorted, func(a, b memory.Memory) int {
		return cmp.Or(a.RecordedAt.Compare(b.RecordedAt), cmp.Compare(a.ID, b.ID))
	})
	lib := &library{global: global, cands: map[string][]cand{}}
	for i, m := range sorted {
		name := sectionOf(m.Kind)
		// Lessons come from Input.Lessons, by scope, not by library.
		if name == "" || m.Kind.Structured() || (global && name == "prefetch") || m.Quarantined || !m.ValidAt(r.now) || r.guarded(m.Text) {
			continue
		}
		c := cand{
			line:  memoryLine(m, r, name),
			score: memory.Score(m, r.now),
			index: i,
			stale: memory.Stale(m, r.now),
			key:   memory.Normalize(m.Text),
		}
		if name == "prefetch" {
			// Consolidation caps its prefetch lines' text together; the
			// quota counts the same, so a derive answer is never cut.
			c.cost = runes(r.clean(m.Text))
		}
		lib.cands[name] = append(lib.cands[name], c)
	}
	return lib
}

// pass renders every section of a library against the given quotas. seen
// holds the duplicate keys already on screen (the workspace's, when this is
// the global library); each pass starts from it afresh. (The seed reused
// one set across its shrink rebuild, so a shrunk section could show only
// the entries the first pass had left out.)
func (r *renderer) pass(lib *library, quota func(string) int, seen map[string]bool) []*part {
	seen = maps.Clone(seen)
	if seen == nil {
		seen = map[string]bool{}
	}
	var parts []*part
	for _, name := range Sections {
		var p *part
		switch name {
		case "handoff":
			if !lib.global && r.handoff != "" {
				text := cut(r.handoff, quota(name), r.opts.MaxLines)
				n := strings.Count(text, "\n") + 1
				p = &part{text: title(name, false) + "\n" + text,
					stat: SectionStat{Entries: n, Quota: quota(name), Used: runes(text)}}
			}
		case "proposals":
			if !lib.global && r.proposal != nil {
				p = &part{text: title(name, false) + "\n" + strings.Join(r.proposal, "\n"), stat: SectionStat{Entries: 1}}
			}
		case "lessons":
			if !lib.global {
				p = r.lessonSection(quota(name))
			}
		case "playbooks":
			if !lib.global {
				p = r.list(name, false, r.playbooks, quota(name), seen)
			}
		default:
			p = r.list(name, lib.global, lib.cands[name], quota(name), seen)
		}
		if p == nil {
			continue
		}
		p.name, p.global, p.priority = name, lib.global, priority(name, lib.global)
		p.stat.Name, p.stat.Global = name, lib.global
		parts = append(parts, p)
	}
	return parts
}

// list renders a section of entries.
func (r *renderer) list(name string, global bool, entries []cand, quota int, seen map[string]bool) *part {
	var rm room
	es, omitted := pick(entries, &rm, r.opts.MaxLines, quota, seen)
	if len(es) == 0 {
		return nil
	}
	body := lines(es)
	if omitted > 0 {
		body = append(body, omittedLine(omitted))
	}
	p := &part{
		text: title(name, global) + "\n" + strings.Join(body, "\n"),
		stat: SectionStat{Entries: rm.entries, Quota: quota, Used: rm.chars, Omitted: omitted},
	}
	for _, e := range es {
		if e.key != "" {
			p.keys = append(p.keys, e.key)
		}
	}
	return p
}
