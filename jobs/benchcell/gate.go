package benchcell

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/trust"
)

// gate passes a cell's model-written texts through the trust gate before
// they are stored: the evidence and the feedback through learn/bench's
// GateEvidence and GateText (credentials redacted, a text that reads as an
// instruction to an agent hidden), the error detail and every string of
// the DSH session log through the gate's check string by string (a
// credential redacted, a quarantined string replaced by a marker naming
// why). A hidden feedback still leaves the score.
//
// The log is stored with the cell and served (the admin run route,
// `mull bench show --json`), and it holds what DSH's tools read from the
// workspace and what the model wrote: untrusted text like the evidence.
func gate(c bench.Cell) bench.Cell {
	c.Detail = redact(c.Detail)
	c.Feedback = bench.GateText(c.Feedback)
	if c.Evidence != nil {
		ev := bench.GateEvidence(*c.Evidence)
		c.Evidence = &ev
	}
	c.Log = gateLog(c.Log)
	return c
}

func redact(s string) string {
	if s == "" {
		return s
	}
	out, _ := trust.Redact(s)
	return out
}

// withheld is what a quarantined string of the log reads as.
const withheld = "(withheld by mull's trust gate: %s)"

// gateLog passes every string of a JSON value (the session log) through
// the trust gate, so the gate never touches its structure; the numbers
// stay as written. A log that grew past MaxLog (markers are longer than
// what they replace) keeps its tail again.
func gateLog(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // epoch milliseconds and counts stay as written
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	rows, ok := walk(v).([]any)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		return b
	}
	out := make([][]byte, 0, len(rows))
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			return nil
		}
		out = append(out, b)
	}
	return tailArray(out, MaxLog)
}

func walk(v any) any {
	switch t := v.(type) {
	case string:
		return gateString(t)
	case []any:
		for i := range t {
			t[i] = walk(t[i])
		}
	case map[string]any:
		for k := range t {
			t[k] = walk(t[k])
		}
	}
	return v
}

// gateString is one string of the log as the gate lets it be stored. A
// string the gate refuses whole is gated again line by line when it has
// several: the system prompt DSH logs holds mull's own digest, whose fixed
// headings are exactly what a forged digest imitates, so whole it is
// always refused; line by line its renderer lines stay, every other line
// is checked, and only a refused line is replaced by the marker.
func gateString(s string) string {
	if s == "" {
		return s
	}
	v := trust.Check(s)
	if !v.Quarantined {
		return v.Text
	}
	if !strings.Contains(s, "\n") {
		return fmt.Sprintf(withheld, v.Reason)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" || trust.FixedLine(l) {
			continue
		}
		if lv := trust.Check(l); lv.Quarantined {
			lines[i] = fmt.Sprintf(withheld, lv.Reason)
		} else {
			lines[i] = lv.Text
		}
	}
	return strings.Join(lines, "\n")
}
