package digest

import (
	"slices"
	"strings"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
)

// Lessons is what the lessons section is made of. Lessons are not read
// from Memories or Global: who sees a lesson is its scope's business
// (global, workspace, session, reflection), not its library's, so the
// caller passes the lessons in force for the one session the digest is
// for, both libraries together.
type Lessons struct {
	// InForce is lesson.InForce's answer for the digest's viewer, in the
	// order to show them (by id: oldest first).
	InForce []memory.Memory
	// Links are the declared conflicts among them ([CONFLICTS]).
	Links []memory.Conflict
	// Precedent, when set (reflection.precedent_in_prompt), adds each
	// lesson's "Precedent: verified Nx, M counterexample(s)". It must
	// answer the same for the same digest, or the text changes between
	// watermarks: count as of the publication.
	Precedent lesson.PrecedentFunc
	// Facts are the negative ledger's current intercepting facts of the
	// workspace (seed 003), newest first: each is a constraint shown in
	// Known failures after the failure lessons, through the render-time
	// gate like every stored text (a fact it refuses is hidden and
	// counted in Blocked). They are not lessons: Output.Lessons never
	// names them.
	Facts []ledger.Fact
}

// lessonBlock is one of lesson.Render's blocks, its items as entries.
type lessonBlock struct {
	title string
	head  []string
	items []string
	// ids are the lessons items show, one per item; 0 for an item that
	// only refers to lessons ([CONFLICTS], [BOUNDARIES]) or is a fact.
	ids []int64
	// facts marks the items that are ledger facts (Known failures items
	// without a lesson id).
	facts []bool
}

// shownLesson is a lesson an entry of the lessons section shows, and the
// line (of the section's text, its title line 0) where the entry starts.
type shownLesson struct {
	id   int64
	line int
}

// lessonTitlePrefix makes a block's title a sub-heading of the section.
const lessonTitlePrefix = "#### "

// prepareLessons renders the lesson blocks once (lesson.Render: failures
// under Known failures with the seed's constraint header, then by scope
// with directives as "Required method", [CONFLICTS], [BOUNDARIES]) and
// marks each lesson's first line as memoryLine marks a memory: external,
// unverified (a retro's or a reflection's, not yet confirmed), stale.
func (r *renderer) prepareLessons(in Lessons) {
	if len(in.InForce) == 0 && len(in.Facts) == 0 {
		return
	}
	byID := make(map[int64]memory.Memory, len(in.InForce))
	for _, m := range in.InForce {
		byID[m.ID] = m
	}
	var constraints [][]string
	for _, f := range in.Facts {
		if !ledger.Constrains(f, r.now) { // its retry is due: no "do not do this"
			continue
		}
		ls, ok := ledger.ConstraintLines(f, r.now)
		if !ok {
			r.blocked++
			continue
		}
		ls[0] += factMarks(f)
		constraints = append(constraints, ls)
	}
	out := lesson.Render(in.InForce, in.Links, lesson.RenderOptions{Precedent: in.Precedent, Constraints: constraints})
	r.blocked += out.Blocked
	for _, b := range out.Blocks {
		lb := lessonBlock{title: lessonTitlePrefix + b.Title, head: b.Head}
		marked := b.Name != lesson.BlockConflicts && b.Name != lesson.BlockBoundaries
		for _, it := range b.Items {
			ls := append([]string(nil), it.Lines...)
			if m, ok := byID[it.ID]; ok && marked && len(ls) > 0 {
				ls[0] += r.marks(m)
			}
			lb.items = append(lb.items, strings.Join(ls, "\n"))
			var id int64
			if marked {
				id = it.ID
			}
			lb.ids = append(lb.ids, id)
			lb.facts = append(lb.facts, b.Name == lesson.BlockFailures && it.ID == 0)
		}
		r.lessons = append(r.lessons, lb)
	}
}

// factMarks marks a ledger fact as marks marks a lesson: a fact an agent
// recorded (POST /v1/ledger/facts, source api) is its say-so, not mull's
// observation, so it is shown unverified like an agent-written lesson;
// only mull's own (auto) and a person's (operator) go unmarked. A source
// mull does not know is unverified too.
func factMarks(f ledger.Fact) string {
	switch f.Source {
	case ledger.SourceAuto, ledger.SourceOperator:
		return ""
	}
	return markUnverified
}

func (r *renderer) marks(m memory.Memory) string {
	s := ""
	switch {
	case m.Src.External():
		s += markExternal
	case memory.Untrusted(m):
		s += markUnverified
	}
	if memory.Stale(m, r.now) {
		s += markStale
	}
	return s
}

// lessonSection fills the lessons section against quota: blocks in
// lesson.Render's order (Known failures first: a constraint outranks a
// heuristic), items in order within each, an item that would overflow the
// quota skipped (the first always taken), at most MaxLines items. The
// ledger's facts are shown in Known failures but fill the quota last: the
// ledger enforces them at every tool call whatever the prompt says, while
// a lesson reaches the agent only here, so a fact never takes a lesson's
// room (and which lessons a digest shows does not depend on the facts).
// A block left with no item is left out with its title and header;
// skipped items are counted in one note at the end.
func (r *renderer) lessonSection(quota int) *part {
	var rm room
	omitted := 0
	take := make([][]bool, len(r.lessons))
	for _, facts := range []bool{false, true} {
		for bi, b := range r.lessons {
			if take[bi] == nil {
				take[bi] = make([]bool, len(b.items))
			}
			for i, it := range b.items {
				if b.facts[i] != facts {
					continue
				}
				n := runes(it) + 1
				if rm.entries >= r.opts.MaxLines || (quota > 0 && rm.entries > 0 && rm.chars+n > quota) {
					omitted++
					continue
				}
				take[bi][i] = true
				rm.entries++
				rm.chars += n
			}
		}
	}
	var body []string
	var shown []shownLesson
	for bi, b := range r.lessons {
		var items []string
		var ids []shownLesson
		// line is where the next item starts in the section's text: its
		// title line, the lines before this block, the block's title and
		// header, then the items taken so far.
		line := 1 + countBodyLines(body) + 1 + len(b.head)
		for i, it := range b.items {
			if !take[bi][i] {
				continue
			}
			if b.ids[i] != 0 {
				ids = append(ids, shownLesson{id: b.ids[i], line: line})
			}
			line += strings.Count(it, "\n") + 1
			items = append(items, it)
		}
		if len(items) == 0 {
			continue
		}
		body = append(append(append(body, b.title), b.head...), items...)
		shown = append(shown, ids...)
	}
	if len(body) == 0 {
		return nil
	}
	if omitted > 0 {
		body = append(body, omittedLine(omitted))
	}
	return &part{
		text:  title("lessons", false) + "\n" + strings.Join(body, "\n"),
		stat:  SectionStat{Entries: rm.entries, Quota: quota, Used: rm.chars, Omitted: omitted},
		shown: shown,
	}
}

// countBodyLines counts the lines of body's entries, an entry of several
// lines counting each.
func countBodyLines(body []string) int {
	n := 0
	for _, b := range body {
		n += strings.Count(b, "\n") + 1
	}
	return n
}

// shownLessons are the ids of the lessons the final text shows, ascending:
// those of the live lessons section whose entry's first line survived fit's
// trim (a trimmed section keeps a prefix of its lines, then shrunkLine). A
// lesson the render gate hid, the quota or MaxLines skipped, or whose
// section was dropped is not among them.
func shownLessons(live []*part) []int64 {
	ids := []int64{}
	for _, p := range live {
		if p.name != "lessons" || p.global {
			continue
		}
		kept := countLines(p.text)
		if p.stat.Trimmed > 0 {
			kept-- // the closing shrunkLine
		}
		for _, s := range p.shown {
			if s.line < kept {
				ids = append(ids, s.id)
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
