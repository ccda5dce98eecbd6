package retro

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Caps bound the evidence one retro reads. The zero value of a field takes
// its default.
type Caps struct {
	// Errors: the newest agent errors. Defaults to 15 (the seed's).
	Errors int
	// ToolFailures: the newest failed tool calls, the session's own and its
	// subagents'. Defaults to 8 (the seed's subagent failures).
	ToolFailures int
	// Feedback: the newest thumbs-down. Zero, the default, takes all of
	// them, as the seed does; they are the last evidence MaxChars drops.
	Feedback int
	// Transcript: the last messages. Defaults to 12 (the seed's).
	Transcript int
	// MaxChars caps the whole excerpt, in characters (runes). Defaults to
	// 3500 (the seed's evidence per queued retro).
	MaxChars int
	// ItemChars cuts each item's text. Defaults to 300. A failed tool
	// call's output gets twice as much (its head and, larger, its tail,
	// where failures print their reason), and the call that came next on
	// the same target half as much.
	ItemChars int
}

// DefaultCaps are the seed's numbers.
var DefaultCaps = Caps{Errors: 15, ToolFailures: 8, Feedback: 0, Transcript: 12, MaxChars: 3500, ItemChars: 300}

// WithDefaults fills the zero fields from DefaultCaps.
func (c Caps) WithDefaults() Caps {
	d := DefaultCaps
	return Caps{
		Errors: cmp.Or(c.Errors, d.Errors), ToolFailures: cmp.Or(c.ToolFailures, d.ToolFailures),
		Feedback: cmp.Or(c.Feedback, d.Feedback), Transcript: cmp.Or(c.Transcript, d.Transcript),
		MaxChars: cmp.Or(c.MaxChars, d.MaxChars), ItemChars: cmp.Or(c.ItemChars, d.ItemChars),
	}
}

// Input is one session's evidence. Order within a slice does not matter:
// items are sorted by time (input order breaks ties), newest last.
type Input struct {
	Errors       []Error
	ToolFailures []ToolFailure
	Feedback     []Feedback
	Transcript   []Message
}

// Error is an agent or provider error.
type Error struct {
	Time    time.Time
	Message string
	Code    string
	Turn    int
	// Subagent is the subagent session it happened in; "" for the
	// session's own.
	Subagent string
}

// ToolFailure is a failed tool call.
type ToolFailure struct {
	Time time.Time
	Tool string
	// Command is bash's command line, or the call's arguments (JSON) for
	// other tools.
	Command string
	// ExitCode is nil when unknown.
	ExitCode  *int
	ErrorCode string
	Output    string
	// Next is the session's next call of the same tool on the same target
	// (the same bash command, the same file) and how it ended: the retry
	// or the fix. Nil when there was none.
	Next *ToolCall
	// Subagent is the subagent session it happened in; "" for the
	// session's own.
	Subagent string
}

// ToolCall is a tool call and how it ended.
type ToolCall struct {
	Time      time.Time
	Command   string
	ExitCode  *int
	IsError   bool
	ErrorCode string
	Output    string
}

// Feedback is the user's feedback. Rated feedback is a thumbs-down (DSH's
// per-message 👎, with its note); unrated feedback is free text (DSH's
// /feedback), which says nothing of a rating.
type Feedback struct {
	Time time.Time
	Text string
	// Unrated: free text without a rating.
	Unrated bool
	// On is the text of the assistant message the 👎 was given to, when
	// known.
	On string
}

// Message is one transcript entry: the human's or the agent's words, never
// text the harness wrote (runtime context, plugin messages).
type Message struct {
	Time time.Time
	// Role is user or assistant.
	Role string
	Text string
}

// section is one rendered block of the excerpt; items are oldest first.
type section struct {
	title string
	items []string
	total int // before capping
}

// BuildExcerpt renders a session's evidence for retro_session: feedback
// first (the seed's strongest evidence), then errors, tool failures and the
// transcript. Each section keeps its newest items, newest last. When the
// whole is over MaxChars, the oldest items go first from the transcript,
// then tool failures, errors and feedback. The same input gives the same
// text.
func BuildExcerpt(in Input, caps Caps) string {
	caps = caps.WithDefaults()
	fb, errs, tools, tr := sections(in, caps)
	return fit([]*section{fb, errs, tools, tr}, []*section{tr, tools, errs, fb}, caps.MaxChars)
}

// ErrorFocus renders the evidence for retro_error, centred on the errors:
// errors first, then tool failures, then only the transcript up to the
// newest error (what led to it), then feedback. Over MaxChars, feedback goes
// first, then the transcript, tool failures and errors.
func ErrorFocus(in Input, caps Caps) string {
	caps = caps.WithDefaults()
	if last, ok := newestError(in.Errors); ok {
		in.Transcript = slices.DeleteFunc(slices.Clone(in.Transcript), func(m Message) bool { return m.Time.After(last) })
	}
	fb, errs, tools, tr := sections(in, caps)
	return fit([]*section{errs, tools, tr, fb}, []*section{fb, tr, tools, errs}, caps.MaxChars)
}

func newestError(es []Error) (time.Time, bool) {
	var last time.Time
	for _, e := range es {
		if e.Time.After(last) {
			last = e.Time
		}
	}
	return last, !last.IsZero()
}

func sections(in Input, c Caps) (fb, errs, tools, tr *section) {
	n := c.ItemChars
	fb = render("USER FEEDBACK (thumbs down)", in.Feedback, c.Feedback, func(f Feedback) (time.Time, string) {
		s := cut(f.Text, n)
		if f.Unrated {
			s = "(unrated, /feedback) " + s
		}
		if f.On != "" {
			s += "\non the agent's message: " + cut(f.On, n/2)
		}
		return f.Time, s
	})
	errs = render("ERRORS", in.Errors, c.Errors, func(e Error) (time.Time, string) {
		s := subagent(e.Subagent)
		if e.Turn > 0 {
			s += fmt.Sprintf("turn %d ", e.Turn)
		}
		if e.Code != "" {
			s += "[" + cut(e.Code, 40) + "] "
		}
		return e.Time, s + cut(e.Message, n)
	})
	tools = render("FAILED TOOL CALLS", in.ToolFailures, c.ToolFailures, func(f ToolFailure) (time.Time, string) {
		s := subagent(f.Subagent) + call(f.Tool, ToolCall{Command: f.Command, ExitCode: f.ExitCode, ErrorCode: f.ErrorCode, Output: f.Output}, n/2, 2*n, 1)
		if f.Next == nil {
			return f.Time, s + "\nno later call on the same target"
		}
		if f.Next.IsError { // a failure of its own, listed after this one
			return f.Time, s + "\nnext call on the same target, at " + stamp(f.Next.Time) + ", failed too (below)"
		}
		return f.Time, s + "\nnext call on the same target, it passed: [" + stamp(f.Next.Time) + "] " + call(f.Tool, *f.Next, n/2, n/2, 0)
	})
	tr = render("LAST TRANSCRIPT ENTRIES", in.Transcript, c.Transcript, func(m Message) (time.Time, string) {
		return m.Time, cut(m.Role, 20) + ": " + cut(m.Text, n)
	})
	return fb, errs, tools, tr
}

func subagent(id string) string {
	if id == "" {
		return ""
	}
	return "(in subagent " + cut(id, 48) + ") "
}

// call renders a tool call: its tool, exit code or error code, its command
// with its whitespace (cmdChars at most, head kept) and its output (outChars
// at most: headQuarters of the room for its head, the rest for its tail;
// a call that passed needs only its end, "OK" or the like).
func call(tool string, c ToolCall, cmdChars, outChars, headQuarters int) string {
	s := cut(tool, 40)
	if c.ExitCode != nil {
		s += fmt.Sprintf(" exit %d", *c.ExitCode)
	}
	if c.ErrorCode != "" {
		s += " " + cut(c.ErrorCode, 40)
	}
	if cmd := strings.TrimSpace(Arguments(tool, c.Command)); cmd != "" {
		s += ": " + keepHead(cmd, cmdChars)
	}
	if out := strings.TrimSpace(cleanOutput(c.Output)); out != "" {
		s += "\n=> " + cutMiddle(out, outChars, headQuarters)
	}
	return s
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// render sorts items by time (stably: input order breaks ties), keeps the
// newest max (all of them when max is 0) and formats them oldest first.
// An item's later lines are indented under its first.
func render[T any](title string, items []T, max int, f func(T) (time.Time, string)) *section {
	type row struct {
		t time.Time
		s string
	}
	rows := make([]row, len(items))
	for i, it := range items {
		t, s := f(it)
		rows[i] = row{t, s}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return a.t.Compare(b.t) })
	if max <= 0 {
		max = len(rows)
	}
	sec := &section{title: title, total: len(rows)}
	for _, r := range rows[len(rows)-min(max, len(rows)):] {
		st := ""
		if !r.t.IsZero() {
			st = "[" + stamp(r.t) + "] "
		}
		sec.items = append(sec.items, "- "+st+indent(r.s))
	}
	return sec
}

// Gutter starts every line of an item but its first. Tool output and
// commands keep their lines, so without it a quoted "## USER FEEDBACK" or
// "- [time] …" line would pass for the excerpt's own structure; behind the
// gutter it cannot, and the prompt says that a line behind it is quoted.
const Gutter = "  | "

// indent puts the gutter before every line of s but the first.
func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if lines[i] == "" {
			lines[i] = strings.TrimRight(Gutter, " ")
		} else {
			lines[i] = Gutter + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// fit drops the oldest items, section by section in drop order, until the
// excerpt fits maxChars; a single item still too long is cut at the end.
func fit(order, drop []*section, maxChars int) string {
	maxChars = max(maxChars, 1)
	out := join(order)
	for _, s := range drop {
		for len(s.items) > 0 && utf8.RuneCountInString(out) > maxChars {
			s.items = s.items[1:]
			out = join(order)
		}
	}
	if r := []rune(out); len(r) > maxChars {
		return string(r[:maxChars-1]) + "…"
	}
	return out
}

func join(order []*section) string {
	var b strings.Builder
	for _, s := range order {
		if s.total == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "## %s (%d of %d, newest last)\n", s.title, len(s.items), s.total)
		for _, it := range s.items {
			b.WriteString(it)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// cut flattens s to one line and keeps at most n runes, marking a cut
// with "…".
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:n])
	}
	return string(r[:n-1]) + "…"
}
