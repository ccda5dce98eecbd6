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
	// ToolFailures: the newest failed tool calls. Defaults to 8 (the seed's
	// subagent failures).
	ToolFailures int
	// Feedback: the newest thumbs-down. The seed took all of them; defaults
	// to 10.
	Feedback int
	// Transcript: the last messages. Defaults to 12 (the seed's).
	Transcript int
	// MaxChars caps the whole excerpt, in characters (runes). Defaults to
	// 3500 (the seed's evidence per queued retro).
	MaxChars int
	// ItemChars cuts each item's text. Defaults to 300.
	ItemChars int
}

// DefaultCaps are the seed's numbers.
var DefaultCaps = Caps{Errors: 15, ToolFailures: 8, Feedback: 10, Transcript: 12, MaxChars: 3500, ItemChars: 300}

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
}

// ToolFailure is a failed tool call.
type ToolFailure struct {
	Time    time.Time
	Tool    string
	Command string
	// ExitCode is nil when unknown.
	ExitCode  *int
	ErrorCode string
	Output    string
}

// Feedback is the user's thumbs-down, with what they said.
type Feedback struct {
	Time time.Time
	Text string
}

// Message is one transcript entry.
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
		return f.Time, cut(f.Text, n)
	})
	errs = render("ERRORS", in.Errors, c.Errors, func(e Error) (time.Time, string) {
		s := ""
		if e.Turn > 0 {
			s = fmt.Sprintf("turn %d ", e.Turn)
		}
		if e.Code != "" {
			s += "[" + cut(e.Code, 40) + "] "
		}
		return e.Time, s + cut(e.Message, n)
	})
	tools = render("FAILED TOOL CALLS", in.ToolFailures, c.ToolFailures, func(f ToolFailure) (time.Time, string) {
		s := cut(f.Tool, 40)
		if f.ExitCode != nil {
			s += fmt.Sprintf(" exit %d", *f.ExitCode)
		}
		if f.ErrorCode != "" {
			s += " " + cut(f.ErrorCode, 40)
		}
		if f.Command != "" {
			s += ": " + cut(f.Command, n/2)
		}
		if f.Output != "" {
			s += " => " + cut(f.Output, n)
		}
		return f.Time, s
	})
	tr = render("LAST TRANSCRIPT ENTRIES", in.Transcript, c.Transcript, func(m Message) (time.Time, string) {
		return m.Time, cut(m.Role, 20) + ": " + cut(m.Text, n)
	})
	return fb, errs, tools, tr
}

// render sorts items by time (stably: input order breaks ties), keeps the
// newest max and formats them oldest first.
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
	sec := &section{title: title, total: len(rows)}
	for _, r := range rows[len(rows)-min(max, len(rows)):] {
		stamp := ""
		if !r.t.IsZero() {
			stamp = "[" + r.t.UTC().Format(time.RFC3339) + "] "
		}
		sec.items = append(sec.items, "- "+stamp+r.s)
	}
	return sec
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
