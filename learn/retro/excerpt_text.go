package retro

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// What the excerpt does to tool text: it keeps the text's whitespace (a
// command's lines and indentation are part of it), drops what only a
// terminal draws, and cuts in the middle with a marker saying how much went.

// keepHead cuts s to at most n runes keeping mostly its head: a command
// says what it does first.
func keepHead(s string, n int) string { return cutMiddle(s, n, 3) }

// cutMiddle keeps headQuarters quarters of the room for s's head and the
// rest for its tail, with "…[N chars cut]…" on a line of its own between.
// A failure's output keeps one quarter of head: failures print their
// reason, and DSH its "[exit code: N]", last.
// A cut near a line break moves to it, so kept lines stay whole.
func cutMiddle(s string, n, headQuarters int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	room := n - len([]rune(cutMarker(len(r))))
	if room < 2 {
		return string(r[:max(n, 0)])
	}
	head := room * headQuarters / 4
	tail := len(r) - (room - head)
	if i := lastIndexRune(r[:head], '\n'); i >= head/2 {
		head = i
	}
	if i := indexRune(r[tail:], '\n'); i >= 0 && i <= (len(r)-tail)/2 {
		tail += i + 1
	}
	return string(r[:head]) + cutMarker(tail-head) + string(r[tail:])
}

func cutMarker(n int) string { return "\n…[" + strconv.Itoa(n) + " chars cut]…\n" }

func lastIndexRune(r []rune, c rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == c {
			return i
		}
	}
	return -1
}

func indexRune(r []rune, c rune) int {
	for i, x := range r {
		if x == c {
			return i
		}
	}
	return -1
}

var (
	ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)`)
	// rule is a separator line's long run of one character (unittest's
	// 70 '=' and '-'): three say as much.
	rule   = regexp.MustCompile(`(?m)^([=\-_*#~+])[=\-_*#~+]{9,}$`)
	blanks = regexp.MustCompile(`\n{3,}`)
)

// cleanOutput drops terminal escapes, carriage-return redraws (a progress
// bar keeps its last state), trailing spaces and runs of blank lines, and
// shortens separator lines; every other character stays.
func cleanOutput(s string) string {
	s = ansi.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if j := strings.LastIndexByte(strings.TrimRight(l, "\r"), '\r'); j >= 0 {
			l = l[j+1:]
		}
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	s = strings.Join(lines, "\n")
	s = rule.ReplaceAllStringFunc(s, func(m string) string { return m[:3] })
	return blanks.ReplaceAllString(s, "\n\n")
}

// Arguments renders a tool call's arguments for the excerpt: bash's command
// line as it is, and a JSON object of arguments (the other tools') as one
// "key: value" line per argument in their order, string values unescaped
// so that an edit's old and new text keep their lines and indentation.
// Anything else is returned as it is.
func Arguments(tool, command string) string {
	if tool == "bash" {
		return command
	}
	pairs, ok := objectPairs(command)
	if !ok {
		return command
	}
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.key + ": ")
		var s string
		if json.Unmarshal(p.value, &s) != nil {
			var c bytes.Buffer
			if json.Compact(&c, p.value) == nil {
				s = c.String()
			} else {
				s = string(p.value)
			}
		} else if strings.Contains(s, "\n") {
			s = "\n" + s
		}
		b.WriteString(s)
	}
	return b.String()
}

// target is what a tool call acts on, to match a failed call with the next
// one on the same thing: bash's command line (its spacing aside), a file
// tool's path, or else all its arguments.
func target(tool, command string) string {
	if tool == "bash" {
		return strings.Join(strings.Fields(command), " ")
	}
	if pairs, ok := objectPairs(command); ok {
		for _, key := range []string{"file_path", "path"} {
			for _, p := range pairs {
				var s string
				if p.key == key && json.Unmarshal(p.value, &s) == nil && s != "" {
					return s
				}
			}
		}
	}
	return strings.TrimSpace(command)
}

type pair struct {
	key   string
	value json.RawMessage
}

// objectPairs reads a JSON object's members in order.
func objectPairs(s string) ([]pair, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out []pair
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, pair{key, v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	return out, true
}
