package benchcell

import (
	"bytes"
	"encoding/json"

	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/trust"
)

// gate passes a cell's model-written texts through the trust gate before
// they are stored: every credential redacted (learn/trust.Redact), and
// feedback that reads like an instruction to an agent withheld. Evidence
// and feedback are shown to people and the agent's benchmark tool, never
// injected as memory; a quarantined feedback still leaves the score.
func gate(c bench.Cell) bench.Cell {
	c.Detail = redact(c.Detail)
	if c.Feedback != "" {
		v := trust.Check(c.Feedback)
		c.Feedback = v.Text
		if v.Quarantined {
			c.Feedback = "[feedback withheld by the trust gate: " + v.Reason + "]"
		}
	}
	if ev := c.Evidence; ev != nil {
		g := bench.Evidence{Completed: ev.Completed, Summary: redact(ev.Summary),
			Actions: redactAll(ev.Actions), Observations: redactAll(ev.Observations)}
		for _, a := range ev.Artifacts {
			g.Artifacts = append(g.Artifacts, bench.Artifact{Name: redact(a.Name), Content: redact(a.Content)})
		}
		c.Evidence = &g
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
