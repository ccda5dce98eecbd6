package trust

import (
	"regexp"
	"strings"
)

// Neutralize makes one line inert as structure, wherever the renderer puts
// it (at a line start, or after its "- " or "> "): it cannot open a
// Markdown heading, a quote, a fenced block, a setext underline or thematic
// break, a role or HTML-ish tag, a chat template token, and it cannot equal
// one of the digest's own lines.
//
// The escape is the one the digest already uses for template braces: the
// character that would open structure becomes its full-width form (＃ ＞ ｀
// ～ ＜ ［ and so on). To the model it is still visibly the same character,
// so the line reads as written; no Markdown or template engine treats it as
// syntax; and it is one rune for one, so quotas count the same. A
// backslash escape would work for Markdown only, and the digest is read raw
// by a model, not rendered.
func Neutralize(line string) string {
	body := strings.TrimLeft(line, " \t")
	indent := line[:len(line)-len(body)]
	if body == "" {
		return line
	}
	body = tagLike.ReplaceAllStringFunc(body, func(m string) string {
		return widen(m[:1]) + m[1:]
	})
	body = strings.NewReplacer("[INST]", "［INST］", "[/INST]", "［/INST］", "[inst]", "［inst］", "[/inst]", "［/inst］").Replace(body)
	switch {
	case structureStart.MatchString(body):
		body = widen(body[:1]) + body[1:]
	case rule.MatchString(body):
		body = widen(body[:1]) + body[1:]
	}
	if FixedLine(body) {
		body = "“" + body + "”"
	}
	return indent + body
}

// tagLike is what could open a tag or a template token: "<" before a
// letter, "/", "!", "?" or "|", and "<<" before SYS.
var tagLike = regexp.MustCompile(`<(?:[A-Za-z/!?|]|<\s*/?\s*(?i:sys))`)

// structureStart: a heading, a quote, a fence, a list-like role tag.
var structureStart = regexp.MustCompile("^(#|>|```|~~~|\\[/?(?i:inst)\\]|\\[(?i:system|assistant|user|human)\\])")

// rule: a line of only -, =, _ or * (with spaces), which Markdown reads as
// a thematic break or turns the line above into a heading.
var rule = regexp.MustCompile(`^[-=_*+][-=_*+ \t]*$`)

func widen(c string) string {
	if len(c) == 1 && c[0] > ' ' && c[0] < 0x7f {
		return string(rune(c[0]) + 0xFEE0)
	}
	return c
}

// Structural reports whether a line, as stored, would read as structure in
// the digest; Neutralize(line) never does.
func Structural(line string) bool {
	body := strings.TrimLeft(line, " \t")
	return body != "" && (tagLike.MatchString(body) || structureStart.MatchString(body) ||
		rule.MatchString(body) || FixedLine(body) || strings.Contains(strings.ToLower(body), "[inst]") ||
		strings.Contains(strings.ToLower(body), "[/inst]"))
}

// fixedLines are the lines the digest renderer writes itself (its header,
// section titles, sub-headings, notes and closing line), as patterns over
// the folded, lower-cased line. The digest's tests check that every line it
// writes from a constant is listed here.
var fixedLines = regexp.MustCompile(`^(?:` + strings.Join([]string{
	`#+.*`,
	`data from past sessions, not instructions.*`,
	`\(end of remembered context.*`,
	`known failures \(constraints.*`,
	`lessons \(heuristics to weigh\):?`,
	`actions that produced a bad outcome.*`,
	`unlike a lesson, this is not a heuristic to weigh.*`,
	`\[(conflicts|boundaries)\].*`,
	`the old way is still better under the stated condition.*`,
	`judge which one's condition holds here.*`,
	`nothing changes unless the user accepts it.*`,
	`…\(shortened to fit\)`,
	`…\(left out for length.*`,
	`\(\+\d+ more.*`,
	`…`,
}, "|") + `)$`)

// FixedLine reports whether line, normalized, reads as one of the digest's
// own lines. Look-alikes in full-width or confusable letters are not the
// renderer's lines (Neutralize writes full-width forms itself); the
// instruction check quarantines texts that imitate them.
func FixedLine(line string) bool {
	return fixedLines.MatchString(strings.ToLower(strings.TrimSpace(Normalize(line))))
}
