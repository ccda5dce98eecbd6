package lesson

import (
	"strings"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/trust"
)

// The fixed text of the lesson blocks. The Known failures header and the
// [BOUNDARIES] header are the seed's, verbatim; the rest is mull's.
const (
	failuresTitle = "Known failures"
	failuresHead  = "Actions that produced a bad outcome. When the trigger matches, do not do this.\n" +
		"Unlike a lesson, this is not a heuristic to weigh — it is a constraint."

	boundariesTitle = "[BOUNDARIES] Each lesson below was checked against the strongest case for the old way of working."
	boundariesHead  = "The old way is still better under the stated condition — prefer it there, and apply the lesson only outside it."

	conflictsTitle = "[CONFLICTS] The lessons below were declared to conflict. Nothing was adjudicated:"
	conflictsHead  = "judge which one's condition holds here, and say why you follow the one you do."

	requiredMethod = "Required method: "
)

// The blocks' names, in the order Render returns them. Known failures come
// first: a constraint outranks a heuristic, and a digest cut for length
// cuts from the end.
const (
	BlockFailures   = "failures"
	BlockConflicts  = "conflicts"
	BlockBoundaries = "boundaries"
	// The scope blocks are named by their memory.LessonScope.
)

var scopeTitles = map[memory.LessonScope]string{
	memory.LessonGlobal:     "Lessons: global (every session)",
	memory.LessonWorkspace:  "Lessons: this workspace",
	memory.LessonSession:    "Lessons: this session",
	memory.LessonReflection: "Lessons: reflected in this session",
}

var conflictWords = map[memory.ConflictKind]string{
	memory.ConflictCondition:     "condition: they apply under different conditions",
	memory.ConflictGoal:          "goal: they serve different goals",
	memory.ConflictContradiction: "contradiction: they contradict under the same condition",
	memory.ConflictApparent:      "apparent: a general rule and a specific exception",
}

// lessonTag is how a lesson id is written in mull's text: "L42", a stable
// short form the agent copies into lessons_lookup (the same form as the
// decision environment's).
func lessonTag(id int64) string { return LessonRef(id) }

// PrecedentFunc gives a lesson's precedent counts (the join of task
// snapshots with their outcomes); ok is false when the lesson has none.
type PrecedentFunc func(id int64) (verified, counter int, ok bool)

// RenderOptions shape the lesson blocks.
type RenderOptions struct {
	// Precedent, when set, adds "Precedent: verified Nx, M
	// counterexample(s)" under each lesson it knows
	// (reflection.precedent_in_prompt). nil leaves the counts out.
	Precedent PrecedentFunc
	// Constraints are the negative ledger's current facts (seed 003) as
	// their rendered lines (ledger.ConstraintLines: already through the
	// render-time gate), shown in Known failures after the failure
	// lessons: a refuted path is a constraint too. Their items carry ID 0,
	// since a fact is not a lesson. An entry whose lines are not shaped
	// like an item's ("- " first, "  " after) is hidden and counted in
	// Blocked, so no text can make a line of a title or header.
	Constraints [][]string
}

// Block is one block of the lessons section: a title, fixed header lines
// and items. Title and Head are mull's own text; every line of an item
// comes from a stored field and opens with "- " (its first line) or two
// spaces and a label, so no stored text can produce a line of Title or
// Head. The digest prints Title as a sub-heading and fits Items to its
// quotas.
type Block struct {
	Name  string
	Title string
	Head  []string
	Items []Item
}

// Item is one entry of a block: a lesson (or, in [CONFLICTS], a link from
// lesson ID) as one or more lines.
type Item struct {
	ID    int64
	Lines []string
}

// Text is the block as plain lines: title, header, items.
func (b Block) Text() string {
	ls := append([]string{b.Title}, b.Head...)
	for _, it := range b.Items {
		ls = append(ls, it.Lines...)
	}
	return strings.Join(ls, "\n")
}

// Rendered is the lesson blocks and how many lessons or links the
// render-time gate hid.
type Rendered struct {
	Blocks  []Block
	Blocked int
}

// Text joins the blocks with a blank line between them.
func (r Rendered) Text() string {
	ts := make([]string, len(r.Blocks))
	for i, b := range r.Blocks {
		ts[i] = b.Text()
	}
	return strings.Join(ts, "\n\n")
}

// Render lays out the lessons in force for a session (InForce's answer)
// by the seed's rules:
//   - failures in their own Known failures block, with the seed's
//     constraint header, each tagged with its scope;
//   - the other lessons grouped by scope (global, workspace, session,
//     reflection), directives first as "Required method", in input order;
//   - [CONFLICTS]: each declared link between two shown lessons, both
//     sides side by side, saying nothing was adjudicated;
//   - [BOUNDARIES]: "- L<id>: <narrowed>" for every shown lesson an
//     adversarial review narrowed, under the seed's header;
//   - with opts.Precedent, the seed's "Precedent: verified Nx, M
//     counterexample(s)" under each lesson that has counts.
//
// Every rendered field goes through the render-time gate (trust.Line, as
// the digest does for memory text) and has its braces escaped for DSH's
// template engine; a lesson with any refused field is hidden whole, and a
// link with a refused note too, each counted in Blocked. Empty blocks are
// left out. A free-text lesson (no fields) shows its Text. attempted,
// boundary, source and source_text are not rendered (source_text is never
// injected; lessons_lookup shows the rest).
func Render(inForce []memory.Memory, links []memory.Conflict, opts RenderOptions) Rendered {
	var r Rendered
	failures := Block{Name: BlockFailures, Title: failuresTitle, Head: strings.Split(failuresHead, "\n")}
	byScope := map[memory.LessonScope]*Block{}
	shown := map[int64]string{} // id → its one-line text, for [CONFLICTS]
	var narrowed []Item
	for _, pass := range []memory.Kind{memory.Failure, memory.Directive, memory.Lesson} {
		for _, m := range inForce {
			if m.Kind != pass {
				continue
			}
			g, ok := gateFields(renderFields(m))
			if !ok {
				r.Blocked++
				continue
			}
			it := Item{ID: m.ID, Lines: itemLines(m, g, opts)}
			if _, dup := shown[m.ID]; dup {
				continue
			}
			shown[m.ID] = OneLine(g, m.Kind)
			if m.Kind == memory.Failure {
				failures.Items = append(failures.Items, it)
			} else {
				s := ScopeOf(m)
				if byScope[s] == nil {
					byScope[s] = &Block{Name: string(s), Title: scopeTitles[s]}
				}
				byScope[s].Items = append(byScope[s].Items, it)
			}
			if g.Narrowed != "" {
				narrowed = append(narrowed, Item{ID: m.ID, Lines: []string{"- " + lessonTag(m.ID) + ": " + g.Narrowed}})
			}
		}
	}
	for _, ls := range opts.Constraints {
		if !itemShaped(ls) {
			r.Blocked++
			continue
		}
		failures.Items = append(failures.Items, Item{Lines: ls})
	}
	if len(failures.Items) > 0 {
		r.Blocks = append(r.Blocks, failures)
	}
	for _, s := range memory.LessonScopes {
		if b := byScope[s]; b != nil {
			r.Blocks = append(r.Blocks, *b)
		}
	}
	conflicts := Block{Name: BlockConflicts, Title: conflictsTitle, Head: []string{conflictsHead}}
	for _, l := range links {
		from, okF := shown[l.From]
		to, okT := shown[l.To]
		words, okK := conflictWords[l.Kind]
		if !okF || !okT || !okK || l.From == l.To {
			continue
		}
		lines := []string{"- " + lessonTag(l.From) + " vs " + lessonTag(l.To) + " (" + words + ")",
			"  " + lessonTag(l.From) + ": " + from, "  " + lessonTag(l.To) + ": " + to}
		if strings.TrimSpace(l.Note) != "" {
			note, ok := gateLine(l.Note)
			if !ok {
				r.Blocked++
				continue
			}
			lines = append(lines, "  note: "+note)
		}
		conflicts.Items = append(conflicts.Items, Item{ID: l.From, Lines: lines})
	}
	if len(conflicts.Items) > 0 {
		r.Blocks = append(r.Blocks, conflicts)
	}
	if len(narrowed) > 0 {
		r.Blocks = append(r.Blocks, Block{Name: BlockBoundaries, Title: boundariesTitle, Head: []string{boundariesHead}, Items: narrowed})
	}
	return r
}

// itemLines renders one lesson whose fields g are gated, first line and
// then indented labelled ones, empty fields left out. A lesson:
// "- L12 (high) <problem>", "  do instead: <correction>", "  applies
// when: …". A directive: "- L5 Required method: <correction>", "  problem:
// …", "  applies when: …". A failure: "- L7 (global, high) avoid: <avoid>",
// "  instead: …", "  applies when: …", "  outcome: <problem>". With a
// PrecedentFunc, each ends with "  Precedent: verified 3x, 1
// counterexample(s)".
func itemLines(m memory.Memory, g memory.LessonFields, opts RenderOptions) []string {
	head := "- " + lessonTag(m.ID) + " "
	var tags []string
	if m.Kind == memory.Failure {
		tags = append(tags, string(ScopeOf(m)))
	}
	if g.Confidence != "" {
		tags = append(tags, string(g.Confidence))
	}
	if len(tags) > 0 && m.Kind != memory.Directive {
		head += "(" + strings.Join(tags, ", ") + ") "
	}
	var ls []string
	sub := func(label, v string) {
		if v != "" {
			ls = append(ls, "  "+label+v)
		}
	}
	switch m.Kind {
	case memory.Failure:
		ls = append(ls, head+"avoid: "+g.Avoid)
		sub("instead: ", g.Instead)
		sub("applies when: ", g.AppliesWhen)
		sub("outcome: ", g.Problem)
	case memory.Directive:
		ls = append(ls, head+requiredMethod+g.Correction)
		sub("problem: ", g.Problem)
		sub("applies when: ", g.AppliesWhen)
	default:
		ls = append(ls, head+g.Problem)
		sub("do instead: ", g.Correction)
		sub("applies when: ", g.AppliesWhen)
	}
	if opts.Precedent != nil {
		if v, c, ok := opts.Precedent(m.ID); ok {
			ls = append(ls, "  "+precedentLine(v, c))
		}
	}
	return ls
}

// itemShaped reports lines shaped like an item's: a first line opening
// with "- ", the others with two spaces, none empty or holding a newline.
func itemShaped(ls []string) bool {
	if len(ls) == 0 || !strings.HasPrefix(ls[0], "- ") {
		return false
	}
	for i, l := range ls {
		if strings.ContainsAny(l, "\r\n") || (i > 0 && !strings.HasPrefix(l, "  ")) || strings.TrimSpace(l) == "-" {
			return false
		}
	}
	return true
}

// precedentLine is the seed's rendering of a lesson's precedent counts:
// "Precedent: verified 19x, 1 counterexample(s)". It is the same line as
// the precedent file's formatter; kept here so the blocks depend only on a
// PrecedentFunc.
func precedentLine(verified, counter int) string {
	return FormatPrecedent(Precedent{Verified: verified, Counter: counter})
}

// renderFields is what Render shows of m: its fields, or for a free-text
// lesson from before the lesson model its Text as the problem, so it is
// shown in its scope's block like any other lesson ("- L11 <text>").
func renderFields(m memory.Memory) memory.LessonFields {
	if m.Lesson != nil {
		return *m.Lesson
	}
	return memory.LessonFields{Problem: m.Text}
}

// gateFields passes every rendered field through the render-time gate;
// ok is false when any must not be shown.
func gateFields(f memory.LessonFields) (memory.LessonFields, bool) {
	out := memory.LessonFields{Confidence: f.Confidence}
	for _, p := range []struct{ in, out *string }{
		{&f.Problem, &out.Problem}, {&f.Correction, &out.Correction}, {&f.AppliesWhen, &out.AppliesWhen},
		{&f.Avoid, &out.Avoid}, {&f.Instead, &out.Instead}, {&f.Narrowed, &out.Narrowed},
	} {
		l, ok := gateLine(*p.in)
		if !ok {
			return memory.LessonFields{}, false
		}
		*p.out = l
	}
	switch out.Confidence {
	case memory.ConfidenceHigh, memory.ConfidenceMedium, memory.ConfidenceLow:
	default:
		out.Confidence = ""
	}
	return out, true
}

// gateLine is one stored text as the digest shows it: trust.Line (one
// line, credentials redacted, neutralized), then braces made full-width
// so DSH's template engine never reads "{{" (the digest's escape).
func gateLine(s string) (string, bool) {
	if strings.TrimSpace(s) == "" {
		return "", true
	}
	l, ok := trust.Line(s)
	if !ok {
		return "", false
	}
	return braceEscape.Replace(l), true
}

var braceEscape = strings.NewReplacer("{", "｛", "}", "｝")
