package memories

import (
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/trust"
)

// Gated passes memories about to be copied (a promotion to the global
// library) through the trust gate again: the copy is a new write, and the
// row it copies may predate the gate's current rules. A quarantined one is
// left out; the others are stored redacted.
func Gated(ms []memory.Memory) []memory.Memory {
	out := ms[:0:0]
	for _, m := range ms {
		v := trust.Check(m.Text)
		if v.Quarantined {
			continue
		}
		m.Text = memory.OneLine(v.Text)
		out = append(out, m)
	}
	return out
}

// served passes one stored text through the render-time gate for an
// agent-facing answer: one line, redacted, neutralized; ok is false when
// it must not be shown.
func served(text string) (string, bool) { return trust.Line(text) }

// AgentView is a memory as an agent-facing answer (remember's duplicate,
// invalidate, verify) may show it: a quarantined memory's text is never
// shown, and every other text passes the render-time gate again, since a
// row written before the gate's current rules may hold anything.
func AgentView(m memory.Memory) memory.Memory {
	if line, ok := served(m.Text); ok && !m.Quarantined {
		m.Text = line
	} else {
		m.Text = "(not shown: quarantined by the trust gate)"
	}
	if m.InvalidReason != "" {
		if line, ok := served(m.InvalidReason); ok {
			m.InvalidReason = line
		} else {
			m.InvalidReason = "(not shown: withheld by the trust gate)"
		}
	}
	return m
}
