package harness

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/trust"
)

// Route is how the trajectory was laid out.
type Route string

// The routes (the seed README's plannerPrefixCache auto): A, the verbatim
// tail of the session's turns (when the session showed cache reads, so its
// own prefix is warm); B, a summary: a verbatim signal layer (failures,
// errors, feedback) of SignalRatio of the budget and a one-line-per-turn
// summary of the rest.
const (
	RouteVerbatim Route = "verbatim"
	RouteSummary  Route = "summary"
)

// The trajectory's caps.
const (
	// MaxSignalChars caps one signal (a failed tool result, an error, a
	// feedback) in route B.
	MaxSignalChars = 600
	// MaxSummaryLineChars caps one line of route B's summary.
	MaxSummaryLineChars = 160
)

// Turn is one event of the session, as the trajectory reads it.
type Turn struct {
	At time.Time
	// Type: user_message, assistant_message, tool_result, error, feedback,
	// turn_end, compaction_end.
	Type string
	Text string
	// Failed marks a failed tool result (and errors): signal.
	Failed bool
}

// TrajectoryInput is the session's events and the budget.
type TrajectoryInput struct {
	Turns       []Turn
	MaxChars    int
	SignalRatio float64
	// CacheReads is the session's prompt_cache_hit_tokens so far (its
	// usage events): > 0 picks route A.
	CacheReads int64
}

// Trajectory lays the session out for the model, tail-biased, within
// MaxChars runes (always: the seed's route A adds its truncation header on
// top of maxChars; here the header is inside the budget and says how many
// characters it shows). Credentials are redacted from every text
// (trust.Redact): the trajectory goes to the LLM, and a planner must not
// copy a secret into an entry. The layout is deterministic.
func Trajectory(in TrajectoryInput) (text string, route Route) {
	if in.CacheReads > 0 {
		return verbatim(in.Turns, max(in.MaxChars, 0)), RouteVerbatim
	}
	return summary(in), RouteSummary
}

func redacted(s string) string {
	out, _ := trust.Redact(s)
	return out
}

// verbatim is the seed's serializeTrajectory: the user and assistant text
// turns, "[type] text", blank-line separated, the newest MaxChars kept.
func verbatim(turns []Turn, maxChars int) string {
	var items []string
	for _, t := range turns {
		if (t.Type != "user_message" && t.Type != "assistant_message") || strings.TrimSpace(t.Text) == "" {
			continue
		}
		items = append(items, "["+t.Type+"] "+redacted(t.Text))
	}
	joined := strings.Join(items, "\n\n")
	total := runes(joined)
	if total <= maxChars {
		return joined
	}
	header := func(n int) string {
		return fmt.Sprintf("… (truncated, showing the last %d characters of %d)\n\n", n, total)
	}
	n := maxChars - runes(header(maxChars))
	if n <= 0 {
		return lastRunes(joined, maxChars)
	}
	return header(n) + lastRunes(joined, n)
}

// The section titles of route B.
const (
	signalTitle  = "## Signals (failed tool results, errors, feedback; verbatim, newest kept)"
	summaryTitle = "## Summary (one line per message, tail-biased)"
)

// summary is route B: the signal layer within SignalRatio of the budget,
// the summary within what the signals left.
func summary(in TrajectoryInput) string {
	var signals, lines []string
	for _, t := range in.Turns {
		if s, ok := signal(t); ok {
			signals = append(signals, s)
		}
		if l, ok := summaryLine(t); ok {
			lines = append(lines, l)
		}
	}
	maxChars := max(in.MaxChars, 0)
	ratio := min(max(in.SignalRatio, 0), 1)
	sig := section(signalTitle, signals, "\n\n", "signals", int(ratio*float64(maxChars)))
	rest := maxChars - runes(sig)
	if sig != "" {
		rest -= 2
	}
	sum := section(summaryTitle, lines, "\n", "lines", rest)
	out := sig
	if sig != "" && sum != "" {
		out += "\n\n"
	}
	// The sections are built within the budget; this is the guard.
	return lastRunes(out+sum, maxChars)
}

func signal(t Turn) (string, bool) {
	label := t.Type
	switch {
	case t.Failed:
		label += " failed"
	case t.Type == "error" || t.Type == "feedback":
	default:
		return "", false
	}
	if strings.TrimSpace(t.Text) == "" {
		return "", false
	}
	return truncateTo("["+label+"] "+redacted(strings.TrimSpace(t.Text)), MaxSignalChars), true
}

func summaryLine(t Turn) (string, bool) {
	var who string
	switch t.Type {
	case "user_message":
		who = "user asked: "
	case "assistant_message":
		who = "assistant: "
	case "compaction_end":
		return "- (the context was compacted)", true
	default:
		return "", false
	}
	text := trust.OneLine(redacted(t.Text))
	if text == "" {
		return "", false
	}
	return truncateTo("- "+who+text, MaxSummaryLineChars), true
}

// section is a titled list of the newest items that fit in budget runes,
// with a line counting the older ones left out; "" when nothing fits.
func section(title string, items []string, sep, noun string, budget int) string {
	if len(items) == 0 {
		return ""
	}
	omission := func(n int) string { return fmt.Sprintf("… %d earlier %s left out", n, noun) }
	// The omission line's room, with the widest count it can show.
	reserve := runes(omission(len(items))) + runes(sep)
	room := budget - runes(title) - 1
	used, from := 0, len(items)
	for i := len(items) - 1; i >= 0; i-- {
		need := runes(items[i])
		if from < len(items) {
			need += runes(sep)
		}
		if i > 0 {
			need += reserve
		}
		if used+need > room {
			break
		}
		used += need
		if i > 0 {
			used -= reserve
		}
		from = i
	}
	kept := items[from:]
	if from > 0 {
		if len(kept) == 0 && runes(omission(from)) > room {
			return ""
		}
		kept = append([]string{omission(from)}, kept...)
	}
	return title + "\n" + strings.Join(kept, sep)
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// truncateTo keeps s within n runes, the last one "…" when cut.
func truncateTo(s string, n int) string {
	if runes(s) <= n {
		return s
	}
	return cutRunes(s, n-1) + "…"
}

// lastRunes is the last n runes of s.
func lastRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	total := runes(s)
	if total <= n {
		return s
	}
	skip := total - n
	for i := range s {
		if skip == 0 {
			return s[i:]
		}
		skip--
	}
	return ""
}
