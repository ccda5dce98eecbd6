package digest

import (
	"math"
	"slices"
	"strings"
)

// build renders a library's sections and, when they overflow budget, the
// seed's shrink: the scaled sections are rebuilt with quota
// max(260, quota×scale), scale = max(0.25, max(600, ⌊(budget−fixed)×0.92⌋) /
// scaledChars), where each section counts its text plus two separator
// characters. Unlike the seed, scale is capped at 1 and a rebuilt quota
// never exceeds the configured one: a quota is a ceiling, and the seed's
// 600 floor could scale small sections up past theirs.
func (r *renderer) build(lib *library, budget int, seen map[string]bool) []*part {
	quota := func(name string) int { return r.opts.Quotas[name] }
	parts := r.pass(lib, quota, seen)
	fixed, flexible := 0, 0
	for _, p := range parts {
		if scaled(p.name) {
			flexible += runes(p.text) + 2
		} else {
			fixed += runes(p.text) + 2
		}
	}
	if fixed+flexible <= budget || flexible == 0 {
		return parts
	}
	target := max(600, int(math.Floor(float64(budget-fixed)*0.92)))
	scale := min(1, max(0.25, float64(target)/float64(flexible)))
	return r.pass(lib, func(name string) int {
		q := r.opts.Quotas[name]
		switch {
		case !scaled(name):
			return q
		case q <= 0:
			return 260
		}
		return min(q, max(260, int(math.Floor(float64(q)*scale))))
	}, seen)
}

// fit is the seed's last resort when the text is still over budget: drop
// whole sections from the lowest priority up while more than one is left,
// then trim the lowest-priority section two lines at a time (at most 500
// rounds), removing it once it is down to three lines. Every dropped section
// is named in a note, and, unlike the seed, the note counts against the
// budget, so the promise "never over budget" holds with it.
func fit(live, dropped []*part, budget int) ([]*part, []*part) {
	live, dropped = slices.Clone(live), slices.Clone(dropped)
	over := func() bool { return runes(body(live, dropped)) > budget }
	drop := func(v *part) {
		live = slices.DeleteFunc(live, func(p *part) bool { return p == v })
		v.stat.Dropped = true
		dropped = append(dropped, v)
	}
	for over() && len(live) > 1 {
		drop(lowest(live))
	}
	for round := 0; round < 500 && len(live) > 0 && over(); round++ {
		v := lowest(live)
		ls := strings.Split(v.text, "\n")
		if len(ls) <= 3 {
			drop(v)
			continue
		}
		for _, l := range ls[len(ls)-2:] {
			if l == shrunkLine {
				continue
			}
			v.stat.Trimmed++
			if v.name == "handoff" || strings.HasPrefix(l, "- ") {
				v.stat.Entries--
			}
		}
		v.text = strings.Join(ls[:len(ls)-2], "\n") + "\n" + shrunkLine
	}
	return live, dropped
}

func lowest(live []*part) *part {
	var v *part
	for _, p := range live {
		if v == nil || p.priority > v.priority {
			v = p
		}
	}
	return v
}

// body is the digest between the wrapper: the workspace's sections, then
// the global library under its own heading, then the note naming what was
// dropped.
func body(live, dropped []*part) string {
	slices.SortStableFunc(live, func(a, b *part) int { return a.priority - b.priority })
	var ws, gl []string
	for _, p := range live {
		if p.global {
			gl = append(gl, p.text)
		} else {
			ws = append(ws, p.text)
		}
	}
	s := strings.Join(ws, "\n\n")
	if len(gl) > 0 {
		s = join(s, globalHead+"\n"+strings.Join(gl, "\n\n"))
	}
	if names := droppedNames(live, dropped); len(names) > 0 {
		s = join(s, droppedNote(names))
	}
	return s
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}

// droppedNames names dropped sections in the order they went. When the
// global library lost every section it is named once, as "global library",
// which keeps the note short.
func droppedNames(live, dropped []*part) []string {
	globalLeft := slices.ContainsFunc(live, func(p *part) bool { return p.global })
	var names []string
	collapsed := false
	for _, p := range dropped {
		switch {
		case p.global && !globalLeft:
			if !collapsed {
				names = append(names, "global library")
				collapsed = true
			}
		case p.global:
			names = append(names, "global "+p.name)
		default:
			names = append(names, p.name)
		}
	}
	return names
}
