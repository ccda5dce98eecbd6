package digest_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/memory/digest"
)

// These tests pin the seed's numbers (002, buildMemorySections) with
// fixtures one character either side of each: the numbers are written here
// as the seed gives them, never read from the code, so changing a default
// fails a test.

// dated is the "- [2026-11-28] " every entry one day old starts with.
const dated = 15

// sized is a trusted memory of kind whose rendered line and newline take
// exactly cost characters of its section's quota. letter keeps texts
// distinct.
func sized(kind memory.Kind, letter rune, cost int) memory.Memory {
	return mem(kind, string(letter)+strings.Repeat("·", cost-dated-2), 1)
}

func section(t *testing.T, out digest.Output, name string) digest.SectionStat {
	t.Helper()
	for _, s := range out.Sections {
		if s.Name == name && !s.Global {
			return s
		}
	}
	t.Fatalf("no section %s in %+v", name, out.Sections)
	return digest.SectionStat{}
}

// TestSeedQuotas: each memory section's default quota holds entries that
// add up to it exactly, and skips one that would pass it by a character.
func TestSeedQuotas(t *testing.T) {
	for _, tt := range []struct {
		name  string
		kind  memory.Kind
		quota int
	}{
		{"facts", memory.Fact, 900},
		{"methods", memory.Method, 700},
		{"resources", memory.Resource, 700},
		{"principles", memory.Principle, 600},
		{"hypotheses", memory.Hypothesis, 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first := sized(tt.kind, 'A', 200)
			first.Importance = 9 // picked first
			fits := digest.Render(digest.Input{Now: now, Memories: []memory.Memory{first, sized(tt.kind, 'B', tt.quota-200)}}, digest.Options{})
			if s := section(t, fits, tt.name); s.Entries != 2 || s.Used != tt.quota || s.Omitted != 0 {
				t.Errorf("entries of %d characters together: %+v, want both shown in quota %d", tt.quota, s, tt.quota)
			}
			over := digest.Render(digest.Input{Now: now, Memories: []memory.Memory{first, sized(tt.kind, 'B', tt.quota-199)}}, digest.Options{})
			if s := section(t, over, tt.name); s.Entries != 1 || s.Used != 200 || s.Omitted != 1 {
				t.Errorf("entries of %d characters together: %+v, want the second left out", tt.quota+1, s)
			}
		})
	}
}

// TestSeedHandoffQuota: the handoff (the seed's handoffChars) keeps 700
// characters whole and cuts at 701, from the head.
func TestSeedHandoffQuota(t *testing.T) {
	handoff := func(size int) string {
		// "- " + 98 characters per line, a newline between lines.
		var ls []string
		for left := size; left > 0; {
			n := min(100, left)
			ls = append(ls, fmt.Sprintf("%d", len(ls))+strings.Repeat("·", n-3))
			left -= n + 1
		}
		return strings.Join(ls, "\n")
	}
	for _, tt := range []struct {
		size int
		cut  bool
	}{{700, false}, {701, true}} {
		h := handoff(tt.size)
		out := digest.Render(digest.Input{Now: now, Handoff: h}, digest.Options{})
		s := section(t, out, "handoff")
		cut := strings.Contains(out.Text, "### Handoff from the last session\n…\n")
		if cut != tt.cut || s.Used > 700 || (!cut && s.Used != tt.size) {
			t.Errorf("a handoff of %d characters: cut %v, %+v; want cut %v", tt.size, cut, s, tt.cut)
		}
	}
}

// TestSeedPrefetchQuota: the prefetch section shows everything one
// consolidation may write (3-5 lines, 800 characters together, the seed's
// PREFETCH cap), and 800 is its quota: 801 characters do not all fit.
func TestSeedPrefetchQuota(t *testing.T) {
	lines := func(total int) []string {
		var out []string
		for i := range 5 {
			n := total / 5
			if i == 4 {
				n = total - 4*(total/5)
			}
			out = append(out, fmt.Sprintf("P%d ", i)+strings.Repeat("预", n-3))
		}
		return out
	}
	prefetch := func(texts []string) []memory.Memory {
		var ms []memory.Memory
		for _, s := range texts {
			m := mem(memory.Prefetch, s, 1)
			m.Origin = memory.OriginSleep
			ms = append(ms, m)
		}
		return ms
	}
	most := lines(800)
	if err := (consolidate.DeriveOutput{Principles: []string{"a", "b", "c"}, Hypotheses: []string{"d"}, Prefetch: most}).Validate(); err != nil {
		t.Fatalf("the fixture is not what consolidation may write: %v", err)
	}
	out := digest.Render(digest.Input{Now: now, Memories: prefetch(most)}, digest.Options{})
	if s := section(t, out, "prefetch"); s.Entries != 5 || s.Omitted != 0 || s.Used != 800 {
		t.Errorf("prefetch of 800 characters: %+v, want all 5 lines", s)
	}
	for _, l := range most {
		if !strings.Contains(out.Text, l) {
			t.Errorf("prefetch line %.8q… not shown", l)
		}
	}
	out = digest.Render(digest.Input{Now: now, Memories: prefetch(lines(801))}, digest.Options{})
	if s := section(t, out, "prefetch"); s.Entries != 4 || s.Omitted != 1 {
		t.Errorf("prefetch of 801 characters: %+v, want one line left out", s)
	}
}

// TestSeedMaxLines: a section shows at most 40 entries, however small.
func TestSeedMaxLines(t *testing.T) {
	for _, n := range []int{40, 41} {
		var ms []memory.Memory
		for i := range n {
			ms = append(ms, mem(memory.Fact, fmt.Sprintf("f%02d", i), 1)) // 19 + 1 each: 41 fit in 900
		}
		out := digest.Render(digest.Input{Now: now, Memories: ms}, digest.Options{})
		if s := section(t, out, "facts"); s.Entries != 40 || s.Omitted != n-40 {
			t.Errorf("%d facts: %+v, want 40 shown", n, s)
		}
	}
}

// TestSeedBudget: the digest is 3200 characters, of which the wrapper
// reserves 260: a section of 2940 fits whole, one of 2941 is trimmed.
func TestSeedBudget(t *testing.T) {
	books := func(size int) []digest.Playbook {
		// "### Playbooks (best first)" and 40 lines "- <slug> (0 ok, 0 failed)".
		line := size - len("### Playbooks (best first)")
		var pbs []digest.Playbook
		for i := range 40 {
			n := line / 40
			if i == 39 {
				n = line - 39*(line/40)
			}
			slug := fmt.Sprintf("p%02d-", i) + strings.Repeat("x", n-1-len("- ")-len(" (0 ok, 0 failed)")-4)
			pbs = append(pbs, digest.Playbook{Slug: slug, WrittenAt: ago(1)})
		}
		return pbs
	}
	for _, tt := range []struct {
		size    int
		trimmed bool
	}{{2940, false}, {2941, true}} {
		pbs := books(tt.size)
		roomy := digest.Render(digest.Input{Now: now, Playbooks: pbs}, digest.Options{Budget: 100000})
		if s := section(t, roomy, "playbooks"); s.Chars != tt.size || s.Entries != 40 {
			t.Fatalf("fixture: %+v, want %d characters", s, tt.size)
		}
		out := digest.Render(digest.Input{Now: now, Playbooks: pbs}, digest.Options{})
		s := section(t, out, "playbooks")
		if trimmed := s.Trimmed > 0; trimmed != tt.trimmed || runes(out.Text) > 3200 {
			t.Errorf("playbooks of %d characters: %+v, %d runes; want trimmed %v", tt.size, s, runes(out.Text), tt.trimmed)
		}
		if !tt.trimmed && out.Text != roomy.Text {
			t.Errorf("playbooks of %d characters changed though they fit", tt.size)
		}
	}
}

// TestSeedShrinkFloor: when the fixed sections leave less than the seed's
// 600 to the scaled ones, those are rebuilt against 600 anyway:
// quota × max(0.25, 600 / their size), at least 260.
func TestSeedShrinkFloor(t *testing.T) {
	fixedIn := digest.Input{Now: now,
		Handoff:  strings.Repeat("Did: a step of the migration, and then another one.\n", 13),
		Memories: append(many(memory.Principle, 12, 70), many(memory.Hypothesis, 12, 70)...)}
	for i := range fixedIn.Memories {
		fixedIn.Memories[i].Origin = memory.OriginSleep
	}
	fixedIn.Memories = append(fixedIn.Memories, many(memory.Prefetch, 5, 150)...)
	facts := many(memory.Fact, 30, 60)

	// Each part's size alone (no shrink with this much room), plus its
	// two separator characters.
	size := func(in digest.Input) int {
		n := 0
		for _, s := range digest.Render(in, digest.Options{Budget: 100000}).Sections {
			n += s.Chars + 2
		}
		return n
	}
	fixed, flexible := size(fixedIn), size(digest.Input{Now: now, Memories: facts})
	if left := int(math.Floor(float64(2940-fixed) * 0.92)); left >= 600 || left < 0 {
		t.Fatalf("fixture: the fixed sections leave %d, want under 600", left)
	}
	scale := min(1, max(0.25, 600/float64(flexible)))
	want := max(260, int(math.Floor(900*scale)))
	if want == 260 || want == 900 {
		t.Fatalf("fixture: quota %d does not show the floor (flexible %d)", want, flexible)
	}
	in := fixedIn
	in.Memories = append(slices.Clone(fixedIn.Memories), facts...)
	out := digest.Render(in, digest.Options{})
	check(t, out, digest.Options{})
	if s := section(t, out, "facts"); s.Quota != want {
		t.Errorf("facts rebuilt against quota %d, want %d (fixed %d, facts %d)", s.Quota, want, fixed, flexible)
	}
}

// TestPlaybookUsesBreakATie: between two fresh playbooks of the same rate,
// the one used more comes first, whatever their slugs say.
func TestPlaybookUsesBreakATie(t *testing.T) {
	ps := []digest.Playbook{
		{Slug: "a-never-used", VerifiedAt: ago(1)},                        // 1/2
		{Slug: "z-used-twice", Uses: 2, Successes: 1, VerifiedAt: ago(1)}, // 2/4
	}
	if ps[0].Rate() != ps[1].Rate() {
		t.Fatalf("fixture: rates %v and %v differ", ps[0].Rate(), ps[1].Rate())
	}
	digest.SortPlaybooks(ps, now)
	if ps[0].Slug != "z-used-twice" {
		t.Fatalf("order %s, %s: the one used more must come first", ps[0].Slug, ps[1].Slug)
	}
}

// TestSeedGlobalMinimum: under scope both, the global library is laid out
// in the space the workspace left, but in at least the seed's 300 (its
// remaining = max(300, …)) even when the workspace left less. What shows
// is still decided by the final fit against the whole budget, so the 300
// is seen in how the global sections were built: with the workspace
// leaving under 100, a quota-less global section of 300 characters (with
// its separators) is laid out as it is, one of 301 is rebuilt by the
// shrink (quota 260).
func TestSeedGlobalMinimum(t *testing.T) {
	var pbs []digest.Playbook
	for i := range 38 {
		pbs = append(pbs, digest.Playbook{Slug: fmt.Sprintf("p%02d-", i) + strings.Repeat("x", 52), WrittenAt: ago(1)})
	}
	opts := digest.Options{Quotas: map[string]int{"facts": 0}}
	ws := section(t, digest.Render(digest.Input{Now: now, Playbooks: pbs}, opts), "playbooks")
	left := 2940 - ws.Chars - runes("## Global library (from other workspaces; the entries above win on conflict)") - 3
	if ws.Trimmed != 0 || left >= 100 {
		t.Fatalf("fixture: the workspace leaves %d (%+v), want under 100", left, ws)
	}
	title := runes("### Global facts and preferences") + 1
	for _, tt := range []struct {
		size  int
		quota int
	}{{300, 0}, {301, 260}} {
		g := mem(memory.Fact, "G"+strings.Repeat("·", tt.size-2-title-dated-1), 1)
		g.Workspace = ""
		out := digest.Render(digest.Input{Now: now, Playbooks: pbs, Global: []memory.Memory{g}}, opts)
		check(t, out, opts)
		var gs *digest.SectionStat
		for i, s := range out.Sections {
			if s.Global && s.Name == "facts" {
				gs = &out.Sections[i]
			}
		}
		if gs == nil {
			t.Fatalf("no global facts in %+v", out.Sections)
		}
		if gs.Quota != tt.quota {
			t.Errorf("a global section of %d: built against quota %d, want %d (%+v)", tt.size, gs.Quota, tt.quota, *gs)
		}
	}
}
