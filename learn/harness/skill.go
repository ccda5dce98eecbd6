package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mullhq/mull/learn/trust"
)

// A skill entry reaches DSH as a real skill: a SKILL.md bundle (YAML
// frontmatter, then the markdown body) under $DSH_HOME/skills/mull-<id>/,
// which DSH's filesystem skill provider parses with a YAML parser and lists
// to the model. The bundle is the seed's renderSkillMarkdown with mull's
// provenance; everything in it passes the render-time gate.

// MaxDescriptionChars caps the frontmatter description (the seed's
// MAX_DESCRIPTION_CHARS).
const MaxDescriptionChars = 200

// SkillMarker is the line of a SKILL.md that marks a bundle as mull's. The
// bridge touches (rewrites or removes) a skill directory only when its
// SKILL.md holds exactly this line, indented under metadata:
//
//	metadata:
//	  author: mull
//	  source: harness
//	  mull-version: 3
//
// so a user's skill of the same name is never overwritten.
const SkillMarker = "  author: mull"

// SkillSource is the metadata source of a materialized harness skill.
const SkillSource = "harness"

// SkillName is the DSH skill name of a harness skill entry: "mull-<id>".
func SkillName(id string) string { return "mull-" + id }

// SkillMarkdown renders a skill entry as DSH's SKILL.md (the seed's
// renderSkillMarkdown): frontmatter name (SkillName), description (one line
// of at most MaxDescriptionChars plus "…", the entry's description or else
// its body's first line) and metadata with mull's provenance and the
// entry's version, then the body.
//
// The description passes trust.Line (a withheld one reads Hidden); the body
// passes the gate as a block: credentials redacted, a quarantined body
// rendered as one Hidden line, a line that is "---" escaped so no body
// can close or open a frontmatter block, and a line that reads as one of
// mull's renderers' own (RendererLine) neutralized (trust.Neutralize).
func SkillMarkdown(e Entry) string {
	return "---\n" +
		"name: " + SkillName(e.ID) + "\n" +
		"description: " + yamlString(skillDescription(e)) + "\n" +
		"metadata:\n" +
		SkillMarker + "\n" +
		"  source: " + SkillSource + "\n" +
		"  mull-version: " + strconv.Itoa(e.Version) + "\n" +
		"---\n\n" +
		skillBody(e.Content) + "\n"
}

func skillDescription(e Entry) string {
	d := firstLine(e.Content)
	if e.Description != "" {
		d = strings.TrimSpace(jsSpace.ReplaceAllString(e.Description, " "))
	}
	line, ok := trust.Line(d)
	switch {
	case !ok:
		return Hidden
	case line == "":
		// DSH ignores a skill without a description.
		return "mull harness skill " + e.ID
	}
	return truncate(line, MaxDescriptionChars)
}

// firstLine is the seed's firstLine: the body's first non-blank line,
// trimmed, at most MaxDescriptionChars.
func firstLine(content string) string {
	for l := range strings.SplitSeq(content, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return cutRunes(l, MaxDescriptionChars)
		}
	}
	return ""
}

// delimiter is a line a frontmatter parser may read as "---" (DSH strips
// a trailing \r; others trim).
var delimiter = regexp.MustCompile(`^[ \t]*---[ \t\r]*$`)

func skillBody(content string) string {
	v := trust.Check(content)
	if v.Quarantined {
		return Hidden
	}
	lines := strings.Split(strings.TrimRight(v.Text, "\n"), "\n")
	for i, l := range lines {
		switch {
		case delimiter.MatchString(l):
			lines[i] = `\---`
		case RendererLine(l):
			lines[i] = trust.Neutralize(l)
		}
	}
	return strings.Join(lines, "\n")
}

// harnessLines are the headings mull's harness renderers write (Project,
// Overview, History), over the normalized, lower-cased, trimmed line.
var harnessLines = regexp.MustCompile(`^#+[ \t]*(?:continual harness state|recent harness refinements(?:[ \t]*\(\d+\))?|` +
	`(?:prompt|memory|skill|subagent|recent refinements)[ \t]*\(\d+\))$`)

// RendererLine reports whether a line of a stored text reads as one mull's
// renderers write themselves: a heading of the harness projection
// ("# Continual Harness State", "## memory (1)"), or one of the digest's
// fixed lines (trust.FixedLine) that is not a mere heading. A skill's body
// is the agent's markdown, so its ordinary headings, lists and code stay
// as written and only such lines are neutralized: the agent must not read
// a skill's text as a section of its own harness or memory.
func RendererLine(l string) bool {
	n := strings.ToLower(strings.TrimSpace(trust.Normalize(l)))
	if harnessLines.MatchString(n) {
		return true
	}
	return !strings.HasPrefix(n, "#") && trust.FixedLine(l)
}

// plainSafe is a description YAML reads back as the same string when
// written unquoted: it starts with a letter or "(", and holds no quote,
// backslash or control character.
var plainSafe = regexp.MustCompile(`^[\p{L}(][^\x00-\x1f"'\\\x7f]*$`)

// yamlString writes s as a YAML scalar that parses back to s: plain, as
// the seed writes it, when that is safe, else double-quoted (a JSON string
// is a valid YAML double-quoted scalar). A plain "key: value" or "a #b"
// would not parse back, and "true" or "null" would not be a string.
func yamlString(s string) string {
	if plainSafe.MatchString(s) && !strings.Contains(s, ": ") && !strings.Contains(s, " #") &&
		!strings.HasSuffix(s, ":") && !yamlWord(s) {
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// yamlWord: words a YAML 1.1 or 1.2 parser reads as a boolean or null.
func yamlWord(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null":
		return true
	}
	return false
}

// PlaybookSkill is a retro playbook as a skill entry (id
// "playbook-<slug>" with the slug in kebab case, its steps as a numbered
// list, description "Playbook: <slug> (<n> steps)"), so the agent can read
// its steps and not one truncated line. Blank steps are left out; each
// step is one line.
func PlaybookSkill(slug string, steps []string, updated time.Time) Entry {
	var b strings.Builder
	n := 0
	for _, s := range steps {
		if s = trust.OneLine(s); s != "" {
			n++
			fmt.Fprintf(&b, "%d. %s\n", n, s)
		}
	}
	return Entry{
		ID:          "playbook-" + Kebab(slug),
		Kind:        KindSkill,
		Version:     1,
		Content:     strings.TrimSuffix(b.String(), "\n"),
		Description: fmt.Sprintf("Playbook: %s (%d steps)", trust.OneLine(slug), n),
		Metadata:    Metadata{Lifecycle: Active},
		UpdatedAt:   updated,
	}
}

// Kebab turns s into kebab case (the seed's KEBAB_CASE_PATTERN,
// ^[a-z0-9]+(?:-[a-z0-9]+)*$): lower-cased, every run of other characters
// one "-", none at either end; "" becomes "untitled". Letters outside
// ASCII are dropped, as DSH's skill names are ASCII.
func Kebab(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "untitled"
	}
	return b.String()
}
