package fakeds

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Prompt is what a Responder sees of a request.
type Prompt struct {
	// Type is the mull prompt type, from a "mull-prompt: <type>" line in the
	// system message; "" when there is none.
	Type string
	// User is the text of the last user message.
	User string
	// Messages are all the messages, in order.
	Messages []Message
	// JSON is true when the request asked for response_format json_object.
	JSON bool
	// Kind is the job kind the request names (the X-Mull-Job-Kind header,
	// else a user_id "mull:<kind>:<id>"), "" when none. A request whose
	// system message names no prompt type is answered by the responder of
	// its Kind, when there is one.
	Kind string
}

// Responder makes the default reply for one mull prompt type: a value that
// is sent as its JSON text, valid for the prompt's schema.
type Responder func(p Prompt) any

// PromptMarker starts the line of a system message that names mull's prompt
// type, so the default responder knows which schema to answer in.
const PromptMarker = "mull-prompt:"

// defaultResponders answer each mull prompt type schema-valid JSON. A new
// prompt type is one entry here.
var defaultResponders = map[string]Responder{
	"llm_probe": func(p Prompt) any {
		return map[string]any{"ok": true, "echo": truncateRunes(p.User, 200)}
	},
	"retro_session":      retroSession,
	"consolidate_merge":  consolidateMerge,
	"consolidate_derive": consolidateDerive,
	"reflect_task":       reflectTask,
	"refine_review":      refineReview,
	"bench_cell":         benchCell,
}

// retroSession answers a retro (learn/retro.Output): one lesson naming the
// first error or failed tool call of the excerpt, one fact, and a 3-line
// handoff; the other sections empty. As a model reading the library would,
// it names the id of a library memory its entry says again ("repeats").
func retroSession(p Prompt) any {
	first := firstErrorLine(p.User)
	lesson := "no error in the evidence -> nothing failed -> keep the same approach"
	if first != "" {
		lesson = first + " -> the command failed -> check its output before retrying"
	}
	lib := libraryIDs(p.Messages)
	entry := func(kind, text string) map[string]any {
		e := map[string]any{"text": text}
		if id, ok := lib[kind+": "+text]; ok {
			e["repeats"] = id
		}
		return e
	}
	return map[string]any{
		"lessons":   []any{entry("lesson", lesson)},
		"facts":     []any{entry("fact", "fake-deepseek reviewed this session")},
		"resources": []any{},
		"methods":   []any{},
		"handoff":   []string{"Session reviewed by fake-deepseek.", "Open ends: none recorded.", "Next: continue the task."},
		"playbooks": []any{},
		"supersede": []any{},
		"proposal":  nil,
	}
}

// libraryIDs reads the retro prompt's library ("- [id N] kind: text" lines
// of a system message after the first) into ids by "kind: text".
func libraryIDs(msgs []Message) map[string]int64 {
	ids := map[string]int64{}
	for i, m := range msgs {
		if i == 0 || m.Role != "system" {
			continue
		}
		for line := range strings.Lines(m.Content) {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "- [id ")
			num, text, ok2 := strings.Cut(rest, "] ")
			if id, err := strconv.ParseInt(num, 10, 64); ok && ok2 && err == nil {
				ids[text] = id
			}
		}
	}
	return ids
}

// consolidateMerge answers a merge call (learn/consolidate.MergeOutput):
// for each "## cluster N (kind)" of the input, the longest member text
// (ties: the first), as if the model kept the most detailed wording. So a
// planted cluster of near-duplicates merges cleanly, while a cluster whose
// shorter member carries a detail the longer one lacks (an extra port
// number, say) gets a lossy answer that the job's fidelity check
// (consolidate.Missing) must reject: the job's tests need both.
func consolidateMerge(p Prompt) any {
	merges := []any{}
	cluster, longest, most := 0, "", -1
	flush := func() {
		if cluster > 0 && most >= 0 {
			merges = append(merges, map[string]any{"cluster": cluster, "text": longest})
		}
		cluster, longest, most = 0, "", -1
	}
	for line := range strings.Lines(p.User) {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "## cluster "); ok {
			flush()
			if f := strings.Fields(rest); len(f) > 0 {
				cluster, _ = strconv.Atoi(f[0])
			}
			continue
		}
		text, ok := memberText(line)
		if n := utf8.RuneCountInString(text); ok && n > most {
			longest, most = text, n
		}
	}
	flush()
	return map[string]any{"merges": merges}
}

// memberText is the text of a "- [id N] text" line.
func memberText(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "- [id ")
	if !ok {
		return "", false
	}
	_, text, ok := strings.Cut(rest, "] ")
	return strings.TrimSpace(text), ok && strings.TrimSpace(text) != ""
}

// consolidateDerive answers a derive call (learn/consolidate.DeriveOutput)
// with the seed's least counts: 3 principles, 1 hypothesis and 3 prefetch
// lines, each the first 80 runes of one of the first memory lines of the
// input ("Principle: <line 1>", ...), or a stock line when the input has
// fewer memories. Well within the prefetch cap of 800 characters.
func consolidateDerive(p Prompt) any {
	var lines []string
	in := false
	for line := range strings.Lines(p.User) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## memories")
			continue
		}
		if rest, ok := strings.CutPrefix(line, "- "); in && ok {
			if strings.HasPrefix(rest, "[") {
				if _, after, ok := strings.Cut(rest, "] "); ok {
					rest = after
				}
			}
			if rest = strings.TrimSpace(truncateRunes(rest, 80)); rest != "" {
				lines = append(lines, rest)
			}
		}
	}
	pick := func(label string, i int) string {
		if i < len(lines) {
			return label + ": " + lines[i]
		}
		return fmt.Sprintf("%s: fake-deepseek had no memory line %d to derive from", label, i+1)
	}
	return map[string]any{
		"principles": []string{pick("Principle", 0), pick("Principle", 1), pick("Principle", 2)},
		"hypotheses": []string{pick("Hypothesis", 0)},
		"prefetch":   []string{pick("Prefetch", 0), pick("Prefetch", 1), pick("Prefetch", 2)},
	}
}

// firstErrorLine is the first item under the excerpt's ERRORS or FAILED
// TOOL CALLS heading, without its "- [time] " prefix, made safe for a
// lesson's "a -> b -> c" and cut to 200 runes; "" when there is none.
func firstErrorLine(user string) string {
	in := false
	for line := range strings.Lines(user) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## ERRORS") || strings.HasPrefix(line, "## FAILED TOOL CALLS")
			continue
		}
		if !in || !strings.HasPrefix(line, "- ") {
			continue
		}
		line = strings.TrimPrefix(line, "- ")
		if strings.HasPrefix(line, "[") {
			if i := strings.Index(line, "] "); i > 0 {
				line = line[i+2:]
			}
		}
		line = strings.NewReplacer("->", "-", "→", "-", "\n", " ").Replace(line)
		if line = strings.TrimSpace(truncateRunes(line, 200)); line != "" {
			return line
		}
	}
	return ""
}

// reply is what the fake answers, before max_tokens and faults.
func (s *Server) reply(p Prompt) string {
	if r, ok := s.responders[p.Type]; ok {
		return jsonText(r(p))
	}
	if r, ok := s.responders[p.Kind]; ok && p.Type == "" && p.Kind != "" {
		return jsonText(r(p))
	}
	if p.JSON {
		return `{"ok":true}`
	}
	if p.Type == "" {
		return "This is fake-deepseek: no mull prompt type was given, so here is a plain reply."
	}
	return "This is fake-deepseek: it has no canned reply for prompt type " + p.Type + "."
}

// newPrompt reads the prompt type and the last user message; kinds are
// the job kinds the request names (jobKinds), the first one counts.
func newPrompt(msgs []Message, jsonMode bool, kinds []string) Prompt {
	p := Prompt{Messages: msgs, JSON: jsonMode}
	if len(kinds) > 0 {
		p.Kind = kinds[0]
	}
	for _, m := range msgs {
		switch m.Role {
		case "system":
			if p.Type == "" {
				p.Type = promptType(m.Content)
			}
		case "user":
			p.User = m.Content
		}
	}
	return p
}

func promptType(system string) string {
	for line := range strings.Lines(system) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), PromptMarker); ok {
			// "mull-prompt: retro_session v2": the type, then an optional version.
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0]
			}
			return ""
		}
	}
	return ""
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `{"ok":false}`
	}
	return string(b)
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// wrongSchema is valid JSON that no mull prompt's schema accepts.
const wrongSchema = `{"fake_deepseek":"wrong_schema","note":"this object lacks the fields the prompt asked for"}`

// invalidJSON is the reply of the invalid_json fault.
const invalidJSON = "Sure! Here is the JSON you asked for: {ok: true, note: 'single quotes'"

// truncate cuts a JSON reply short so it no longer parses.
func truncate(content string) string {
	cut := cutBytes(content, len(content)/2)
	for json.Valid([]byte(cut)) && cut != "" {
		cut = cutBytes(cut, len(cut)-1)
	}
	if cut == "" {
		return "{"
	}
	return cut
}

// cutBytes is s cut to at most n bytes, at a rune boundary.
func cutBytes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
