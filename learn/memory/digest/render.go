package digest

import (
	"slices"
)

// Render builds the digest. The workspace's library is laid out first, in
// the budget less the wrapper, exactly as it would be alone. The global
// library then gets the space left (at least 300, as in the seed) and is
// shrunk to it; last, the combined text is fitted, and since every global
// section ranks below every workspace section, the global ones go first. The
// workspace only gives way when the global library is left out entirely and
// naming it in the note takes the room (the note counts against the budget).
func Render(in Input, opts Options) Output {
	opts = opts.WithDefaults()
	r := &renderer{opts: opts, now: in.Now}
	r.prepare(in)
	ws := r.library(in.Memories, false)
	gl := r.library(in.Global, true)

	budget := opts.Budget - max(opts.Wrapper, runes(header)+runes(footer))
	all := r.build(ws, budget, nil)
	live, dropped := fit(all, nil, budget)
	if !gl.empty() {
		seen := map[string]bool{}
		for _, p := range live {
			for _, k := range p.keys {
				seen[k] = true
			}
		}
		left := max(300, budget-runes(body(live, dropped))-runes(globalHead)-3)
		gparts := r.build(gl, left, seen)
		all = append(all, gparts...)
		live, dropped = fit(append(live, gparts...), dropped, budget)
	}

	out := Output{Blocked: r.blocked, Dropped: droppedNames(live, dropped), Lessons: shownLessons(live)}
	text := body(live, dropped)
	if n := runes(text); n > budget && budget > 0 {
		// Unreachable with a sane config (the note alone fits any budget
		// config.Validate allows); kept so the size promise holds regardless.
		text = string([]rune(text)[:budget])
	}
	if text != "" {
		out.Text = header + text + footer
	}
	out.ETag = ETag(out.Text)
	slices.SortStableFunc(all, func(a, b *part) int { return a.priority - b.priority })
	for _, p := range all {
		s := p.stat
		if s.Dropped {
			s.Entries, s.Lines, s.Chars = 0, 0, 0
		} else {
			s.Lines = countLines(p.text) - 1
			s.Chars = runes(p.text)
		}
		out.Sections = append(out.Sections, s)
	}
	return out
}

func countLines(s string) int {
	n := 1
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}
