// Package trust is the one gate between what any writer hands mull and what
// may reach an agent's prompt. Everything mull stores can end up in a system
// prompt, so every text (a memory, a retro's or consolidation's section, a
// handoff, a playbook step, a proposal, and every later kind) passes Check
// before it is stored and Line or Block again when it is rendered or served.
//
// The package is pure: no SQL, River or HTTP.
package trust

import "strings"

// Verdict is what the gate decided about one text.
type Verdict struct {
	// Text is what may be stored: normalized and with every credential
	// redacted. It is set even when Quarantined, so the quarantined copy
	// kept for review holds no secret either.
	Text string
	// Redacted counts the credentials replaced by a marker.
	Redacted int
	// Quarantined: the text reads like an instruction to the agent. It is
	// stored for review with Reason and never served.
	Quarantined bool
	Reason      string
}

// Check is the write-time gate for one text of any length and any number
// of lines: normalization, credential redaction, the instruction check.
//
// The instruction check reads the text before redaction: a redaction
// marker must not split an injection into harmless halves. The stored Text
// is the normalized, redacted text; the folds and readings the check reads
// through (see quarantine) are never stored. The check also reads the raw
// text, for what Normalize drops but a reader or a model still sees: tag
// characters and right-to-left overrides.
func Check(text string) Verdict {
	n := Normalize(text)
	v := Verdict{}
	v.Quarantined, v.Reason = quarantine(text, n)
	v.Text, v.Redacted = redact(n)
	return v
}

// Line is the render-time gate for one stored text shown as one line: the
// gate again (a store written by an older mull or by hand may hold anything),
// folded to one line and neutralized so it cannot open a heading, a role
// tag or a fenced block. ok is false when the text must not be shown.
func Line(text string) (line string, ok bool) {
	v := Check(text)
	if v.Quarantined {
		return "", false
	}
	return Neutralize(OneLine(v.Text)), true
}

// Block is the render-time gate for a stored multi-line text (a handoff):
// the gate on the whole, then each non-blank line neutralized. ok is false
// when the block must not be shown.
func Block(text string) (lines []string, ok bool) {
	v := Check(text)
	if v.Quarantined {
		return nil, false
	}
	for _, l := range strings.Split(v.Text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, Neutralize(l))
		}
	}
	return lines, true
}

// OneLine turns text into a single trimmed line: every line break becomes
// a space.
func OneLine(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		switch r {
		case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
			return ' '
		}
		return r
	}, s))
}
