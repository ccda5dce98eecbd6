package benchcell

import (
	"bytes"
	"encoding/json"

	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/trust"
)

// gate passes a cell's model-written texts through the trust gate before
// they are stored: the evidence and the feedback through learn/bench's
// GateEvidence and GateText (credentials redacted, a text that reads as an
// instruction to an agent hidden), the error detail and every string of
// the DSH session log redacted. A hidden feedback still leaves the score.
func gate(c bench.Cell) bench.Cell {
	c.Detail = redact(c.Detail)
	c.Feedback = bench.GateText(c.Feedback)
	if c.Evidence != nil {
		ev := bench.GateEvidence(*c.Evidence)
		c.Evidence = &ev
	}
	c.Log = redactJSON(c.Log)
	return c
}

func redact(s string) string {
	if s == "" {
		return s
	}
	out, _ := trust.Redact(s)
	return out
}

func redactAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = redact(s)
	}
	return out
}

// redactJSON redacts every string of a JSON value (the session log), so
// the redaction never touches its structure.
func redactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // epoch milliseconds and counts stay as written
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		return nil
	}
	return b
}

func walk(v any) any {
	switch t := v.(type) {
	case string:
		return redact(t)
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
