package digest

import (
	"strings"

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
}

// lessonBlock is one of lesson.Render's blocks, its items as entries.
type lessonBlock struct {
	title string
	head  []string
	items []string
}

// lessonTitlePrefix makes a block's title a sub-heading of the section.
const lessonTitlePrefix = "#### "

// prepareLessons renders the lesson blocks once (lesson.Render: failures
// under Known failures with the seed's constraint header, then by scope
// with directives as "Required method", [CONFLICTS], [BOUNDARIES]) and
// marks each lesson's first line as memoryLine marks a memory: external,
// unverified (a retro's or a reflection's, not yet confirmed), stale.
func (r *renderer) prepareLessons(in Lessons) {
	if len(in.InForce) == 0 {
		return
	}
	byID := make(map[int64]memory.Memory, len(in.InForce))
	for _, m := range in.InForce {
		byID[m.ID] = m
	}
	out := lesson.Render(in.InForce, in.Links, lesson.RenderOptions{Precedent: in.Precedent})
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
		}
		r.lessons = append(r.lessons, lb)
	}
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
// quota skipped (the first always taken), at most MaxLines items. A block
// left with no item is left out with its title and header; skipped items
// are counted in one note at the end.
func (r *renderer) lessonSection(quota int) *part {
	var rm room
	var body []string
	omitted := 0
	for _, b := range r.lessons {
		var items []string
		for _, it := range b.items {
			n := runes(it) + 1
			if rm.entries >= r.opts.MaxLines || (quota > 0 && rm.entries > 0 && rm.chars+n > quota) {
				omitted++
				continue
			}
			items = append(items, it)
			rm.entries++
			rm.chars += n
		}
		if len(items) == 0 {
			continue
		}
		body = append(append(append(body, b.title), b.head...), items...)
	}
	if len(body) == 0 {
		return nil
	}
	if omitted > 0 {
		body = append(body, omittedLine(omitted))
	}
	return &part{
		text: title("lessons", false) + "\n" + strings.Join(body, "\n"),
		stat: SectionStat{Entries: rm.entries, Quota: quota, Used: rm.chars, Omitted: omitted},
	}
}
